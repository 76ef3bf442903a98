// How large a workspace cublas::bind_stream gives cuBLAS (cublas.h says
// why aotirt gives it one at all). Host-only and header-only, so that
// tests/shims/cublas_workspace_check.cpp checks it without a GPU.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace aotirt {
namespace cublas {

// The bytes for a device of `sm_version` (major * 10 + minor), given the text
// of CUBLAS_WORKSPACE_CONFIG (nullptr when unset): the sum over its
// ":SIZE:COUNT" pairs of SIZE KiB times COUNT, as cuBLAS and torch read it;
// a text with no such pair is ignored, as torch ignores it. Unset: torch's
// defaults, 32 MiB on Hopper and newer, 8 MiB + 128 KiB before.
inline size_t workspace_bytes(int sm_version, const char* config) {
  if (config) {
    size_t total = 0;
    bool any = false;
    for (const char* at = std::strchr(config, ':'); at; at = std::strchr(at, ':')) {
      char* size_end = nullptr;
      const unsigned long long size = std::strtoull(at + 1, &size_end, 10);
      if (size_end == at + 1 || *size_end != ':') {
        ++at;  // not ":SIZE:": look from the next colon
        continue;
      }
      char* count_end = nullptr;
      const unsigned long long count = std::strtoull(size_end + 1, &count_end, 10);
      if (count_end == size_end + 1) {
        at = size_end;  // ":SIZE:" with no COUNT: its second colon may start a pair
        continue;
      }
      total += static_cast<size_t>(size) * 1024 * static_cast<size_t>(count);
      any = true;
      at = count_end;
    }
    if (any) return total;
  }
  return sm_version >= 90 ? size_t{32} << 20 : size_t{4096} * 1024 * 2 + size_t{16} * 1024 * 8;
}

}  // namespace cublas
}  // namespace aotirt
