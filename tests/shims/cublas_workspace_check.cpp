// The cuBLAS workspace size (cuda_src/shims/libs/cublas_workspace.h) for
// CUBLAS_WORKSPACE_CONFIG's forms; run by test_cublas_workspace.py.
#include <cstdio>

#include "shims/libs/cublas_workspace.h"

int main() {
  using aotirt::cublas::workspace_bytes;
  struct Case {
    int sm;
    const char* config;
    size_t want;
  } cases[] = {
      {90, nullptr, size_t{32} << 20},                         // torch's Hopper default
      {100, nullptr, size_t{32} << 20},
      {80, nullptr, size_t{4096} * 1024 * 2 + 16 * 1024 * 8},  // before Hopper
      {90, ":4096:8", size_t{4096} * 1024 * 8},
      {90, ":16:8", size_t{16} * 1024 * 8},                    // the deterministic setting
      {90, ":0:0", 0},                                         // no workspace at all
      {80, ":4096:2:16:8", size_t{4096} * 1024 * 2 + 16 * 1024 * 8},
      {90, "4096:8", size_t{32} << 20},                        // no leading colon: no pair, ignored
      {90, "", size_t{32} << 20},
      {90, ":abc:2", size_t{32} << 20},
      {90, ":16:", size_t{32} << 20},
      {90, ":16::4:2", size_t{4} * 1024 * 2},                  // ":16:" has no count; ":4:2" counts
  };
  int failures = 0;
  for (const Case& c : cases) {
    const size_t got = workspace_bytes(c.sm, c.config);
    if (got != c.want) {
      std::printf("sm %d config %s: %zu, want %zu\n", c.sm, c.config ? c.config : "(unset)", got, c.want);
      ++failures;
    }
  }
  std::printf("%zu cases, %d failures\n", sizeof cases / sizeof cases[0], failures);
  return failures != 0;
}
