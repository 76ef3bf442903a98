// Philox4x32-10 (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2,
// 3", SC11; the generator of curand's Philox4_32_10 and of torch's CUDA
// RNG), and the conversions from its words to torch's distributions. Plain
// C++ that nvcc also compiles for the device, so the CPU and CUDA shims draw
// the same numbers for the same seed and counter (tests/shims/philox_check.cpp
// checks the published known answers on the host, with g++).
//
// A draw of n values reads counters first .. first + blocks(n) - 1 (the key
// is the seed): value i comes from counter first + i / per_block, word
// i % per_block (64-bit values take two words, a normal pair two values).
// aotirt's numbers are not torch's (torch maps its Philox streams onto
// threads differently): same distributions, different values.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define AOTIRT_HD __host__ __device__ __forceinline__
#else
#define AOTIRT_HD inline
#endif

namespace aotirt {
namespace philox {

struct Words {
  uint32_t w[4];
};

AOTIRT_HD uint32_t mulhilo(uint32_t a, uint32_t b, uint32_t* hi) {
  const uint64_t product = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(product >> 32);
  return static_cast<uint32_t>(product);
}

// The four words of counter {c0, c1, c2, c3} under key {k0, k1}: ten rounds,
// the key bumped by the Weyl constants before rounds 2..10.
AOTIRT_HD Words block(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    if (round) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint32_t hi0, hi1;
    const uint32_t lo0 = mulhilo(0xD2511F53u, c0, &hi0);
    const uint32_t lo1 = mulhilo(0xCD9E8D57u, c2, &hi1);
    const uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
  }
  return Words{{c0, c1, c2, c3}};
}

// Counter `counter` (64 bits; the upper two words stay 0) under `seed`.
AOTIRT_HD Words at(uint64_t seed, uint64_t counter) {
  return block(static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0u, 0u,
               static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

AOTIRT_HD uint64_t join(uint32_t lo, uint32_t hi) { return (static_cast<uint64_t>(hi) << 32) | lo; }

// w % range for 32-bit words w and a range in [1, 2^32], without a divide
// (the CUDA kernel's: a 32-bit modulo by a run-time divisor is a dozen
// instructions, a 64-bit one a call). Granlund and Montgomery's round-up
// multiplier ("Division by Invariant Integers using Multiplication", PLDI
// 1994, figure 4.1): with s = ceil(log2 range) and
// magic = floor(2^32 (2^s - range) / range) + 1 (< 2^32),
// w / range = (mulhi(w, magic) + w) >> s exactly for every 32-bit w, the sum
// taken in 64 bits. A range of 2^32 is kept as 0, where w - q * 0 = w.
// tests/shims/philox_check.cpp checks it against % on the host.
struct Modulus {
  uint32_t range = 1;  // mod 2^32
  uint32_t magic = 1;
  uint32_t shift = 0;
};

inline Modulus modulus_of(uint64_t range) {
  Modulus m;
  m.range = static_cast<uint32_t>(range);
  if (m.range == 0) return m;  // 2^32: any quotient times 0 leaves w
  while ((uint64_t{1} << m.shift) < range) ++m.shift;
  m.magic = static_cast<uint32_t>((((uint64_t{1} << m.shift) - range) << 32) / range + 1);
  return m;
}

AOTIRT_HD uint32_t remainder(uint32_t w, const Modulus& m) {
  const uint64_t high = (static_cast<uint64_t>(w) * m.magic) >> 32;
  const uint32_t quotient = static_cast<uint32_t>((high + w) >> m.shift);
  return w - quotient * m.range;
}

// Uniform in [0, 1) with `digits` random bits (torch's: the dtype's
// significand digits, so every value is exact and 1 is never reached).
AOTIRT_HD float uniform_float(uint32_t word, int digits) {
  return static_cast<float>(word >> (32 - digits)) * (1.0f / static_cast<float>(1u << digits));
}
AOTIRT_HD double uniform_double(uint64_t word) {
  return static_cast<double>(word >> 11) * (1.0 / 9007199254740992.0);  // 53 bits, 2^-53
}
// In (0, 1]: Box-Muller takes its logarithm.
AOTIRT_HD float open_uniform_float(uint32_t word) {
  return static_cast<float>((word >> 8) + 1u) * (1.0f / 16777216.0f);
}
AOTIRT_HD double open_uniform_double(uint64_t word) {
  return static_cast<double>((word >> 11) + 1u) * (1.0 / 9007199254740992.0);
}

}  // namespace philox
}  // namespace aotirt
