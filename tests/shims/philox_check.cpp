// Philox4x32-10 (cuda_src/shims/random/philox.h) against the published
// known answers (Random123's kat_vectors: counter[4] key[2] -> output[4]),
// compiled with g++ by tests/shims/test_random_shims.py; and philox::remainder
// (the CUDA kernel's division-free w % range) against %.
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
  // Ranges near every power of two and many small and arbitrary ones, each
  // against edge and pseudo-random words (a 64-bit LCG: no <random> state).
  uint64_t lcg = 0x243f6a8885a308d3ull;
  auto next = [&lcg] {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(lcg >> 32);
  };
  uint64_t ranges[4000];
  int count = 0;
  for (uint64_t r = 1; r <= 1000; ++r) ranges[count++] = r;
  for (int b = 1; b <= 32; ++b)
    for (int64_t delta = -3; delta <= 3; ++delta) {
      const int64_t r = (int64_t{1} << b) + delta;
      if (r >= 1 && r <= (int64_t{1} << 32)) ranges[count++] = static_cast<uint64_t>(r);
    }
  ranges[count++] = 128256;  // a vocabulary size: the sampling benchmark's range
  while (count < 4000) ranges[count++] = uint64_t{next()} + 1;
  for (int k = 0; k < count; ++k) {
    const uint64_t range = ranges[k];
    const aotirt::philox::Modulus m = aotirt::philox::modulus_of(range);
    const uint32_t edges[] = {0u, 1u, 2u, 0x7fffffffu, 0x80000000u, 0xfffffffeu, 0xffffffffu,
                              static_cast<uint32_t>(range - 1), static_cast<uint32_t>(range),
                              static_cast<uint32_t>(range + 1), static_cast<uint32_t>(2 * range - 1)};
    for (int j = 0; j < 11 + 2000; ++j) {
      const uint32_t w = j < 11 ? edges[j] : next();
      const uint32_t want = static_cast<uint32_t>(w % range), got = aotirt::philox::remainder(w, m);
      if (got != want && failures++ < 20)
        std::printf("remainder(%u, %llu): got %u, want %u\n", w, static_cast<unsigned long long>(range), got, want);
    }
  }
  std::printf("%d failures\n", failures);
  return failures ? 1 : 0;
}
