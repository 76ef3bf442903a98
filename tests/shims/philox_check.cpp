// Philox4x32-10 (cuda_src/shims/random/philox.h) against the published
// known answers (Random123's kat_vectors: counter[4] key[2] -> output[4]),
// compiled with g++ by tests/shims/test_random_shims.py.
#include <cstdint>
#include <cstdio>

#include "shims/random/philox.h"

int main() {
  struct Case {
    uint32_t ctr[4], key[2], want[4];
  } cases[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  int failures = 0;
  for (const Case& c : cases) {
    const aotirt::philox::Words got =
        aotirt::philox::block(c.ctr[0], c.ctr[1], c.ctr[2], c.ctr[3], c.key[0], c.key[1]);
    for (int i = 0; i < 4; ++i)
      if (got.w[i] != c.want[i]) {
        std::printf("counter %08x key %08x word %d: got %08x, want %08x\n", c.ctr[0], c.key[0], i, got.w[i], c.want[i]);
        ++failures;
      }
  }
  std::printf("%d failures\n", failures);
  return failures ? 1 : 0;
}
