// One Philox block turned into values of a distribution (random.h's Draw),
// for the CPU loop and the CUDA kernel alike (both compiled by nvcc; the
// host uses the same conversions), so both devices draw the same values for
// the same seed and counters. Box-Muller's logf/cosf may round differently
// on the host and the device: normal values agree to a few ulp, not bits.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "shims/random/philox.h"

namespace aotirt {
namespace random {

enum class Kind : int { Uniform, Normal, Integer };

// What one call draws: uniform [0, 1), standard normal, or integers in
// [low, low + range) (range >= 1).
struct Draw {
  Kind kind = Kind::Uniform;
  int64_t low = 0;
  uint64_t range = 1;
};

template <typename T>
constexpr bool kIsDouble = std::is_same_v<T, double>;

// Values per Philox block (four 32-bit words): 64-bit draws take two words.
template <typename T>
AOTIRT_HD int per_block(const Draw& d) {
  if (d.kind == Kind::Integer) return d.range > (uint64_t{1} << 32) ? 2 : 4;
  return kIsDouble<T> ? 2 : 4;
}

// The significand digits of a floating type (torch's uniform uses them all).
template <typename T>
AOTIRT_HD int digits() {
  if constexpr (std::is_same_v<T, __half>) return 11;
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return 8;
  else return 24;
}

template <typename T>
AOTIRT_HD T from_float(float v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(v);
  else return static_cast<T>(v);
}

template <typename T>
AOTIRT_HD T from_int(int64_t v) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>)
    return from_float<T>(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, bool>) return v != 0;
  else return static_cast<T>(v);
}

// Four 32-bit residues w % range (range <= 2^32) as integers in
// [low, low + range), as torch's random_(from, to) maps 32-bit draws.
template <typename T>
AOTIRT_HD void integers(int64_t low, const uint32_t residues[4], T out[4]) {
  for (int j = 0; j < 4; ++j) out[j] = from_int<T>(static_cast<int64_t>(static_cast<uint64_t>(low) + residues[j]));
}

// Two values from the two 64-bit pairs, for a range over 2^32.
template <typename T>
AOTIRT_HD void wide_integers(const Draw& d, const philox::Words& r, T out[4]) {
  out[0] = from_int<T>(static_cast<int64_t>(static_cast<uint64_t>(d.low) + philox::join(r.w[0], r.w[1]) % d.range));
  out[1] = from_int<T>(static_cast<int64_t>(static_cast<uint64_t>(d.low) + philox::join(r.w[2], r.w[3]) % d.range));
}

template <typename T>
AOTIRT_HD void uniforms(const philox::Words& r, T out[4]) {
  if constexpr (kIsDouble<T>) {
    out[0] = philox::uniform_double(philox::join(r.w[0], r.w[1]));
    out[1] = philox::uniform_double(philox::join(r.w[2], r.w[3]));
  } else {
    for (int j = 0; j < 4; ++j) out[j] = from_float<T>(philox::uniform_float(r.w[j], digits<T>()));
  }
}

// One sincosf on the device, where it is sinf's and cosf's values for the
// work of one argument reduction; the host keeps the two calls it always
// made (glibc's sincosf is not promised to round as they do).
AOTIRT_HD void sin_cos(float angle, float* s, float* c) {
#if defined(__CUDA_ARCH__)
  sincosf(angle, s, c);
#else
  *s = sinf(angle);
  *c = cosf(angle);
#endif
}

template <typename T>
AOTIRT_HD void normals(const philox::Words& r, T out[4]) {
  if constexpr (kIsDouble<T>) {
    const double radius = sqrt(-2.0 * log(philox::open_uniform_double(philox::join(r.w[0], r.w[1]))));
    const double angle = 6.283185307179586 * philox::uniform_double(philox::join(r.w[2], r.w[3]));
    out[0] = radius * cos(angle);
    out[1] = radius * sin(angle);
  } else {
    for (int p = 0; p < 2; ++p) {
      const float radius = sqrtf(-2.0f * logf(philox::open_uniform_float(r.w[2 * p])));
      float s = 0.0f, c = 0.0f;
      sin_cos(6.2831853f * philox::uniform_float(r.w[2 * p + 1], 24), &s, &c);
      out[2 * p] = from_float<T>(radius * c);
      out[2 * p + 1] = from_float<T>(radius * s);
    }
  }
}

// The values of counter `counter`: out[0 .. per_block<T>(d)). (The CPU's
// loop; the CUDA kernel calls the pieces above with the kind fixed at
// compile time and philox::remainder for the modulo, the same values.)
template <typename T>
AOTIRT_HD void block_values(const Draw& d, uint64_t seed, uint64_t counter, T out[4]) {
  const philox::Words r = philox::at(seed, counter);
  if (d.kind == Kind::Integer) {
    if (d.range > (uint64_t{1} << 32)) {
      wide_integers<T>(d, r, out);
    } else {
      uint32_t residues[4];
      for (int j = 0; j < 4; ++j) residues[j] = static_cast<uint32_t>(r.w[j] % d.range);
      integers<T>(d.low, residues, out);
    }
  } else if (d.kind == Kind::Uniform) {
    uniforms<T>(r, out);
  } else {
    normals<T>(r, out);
  }
}

}  // namespace random
}  // namespace aotirt
