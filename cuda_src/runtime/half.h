// float16 and bfloat16 to and from float on the host, bit for bit as IEEE and
// torch do it (round to nearest even; NaN stays NaN). Plain C++, so the CPU
// matmul needs neither CUDA's half headers nor a GPU.
#pragma once

#include <cstdint>
#include <cstring>

namespace aotirt {

inline float bits_to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline uint32_t float_to_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// bfloat16 is the top half of a float32.
inline float bf16_to_float(uint16_t h) { return bits_to_float(static_cast<uint32_t>(h) << 16); }

inline uint16_t float_to_bf16(float f) {
  uint32_t bits = float_to_bits(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // quiet NaN
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);  // ties to even
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

inline float f16_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return bits_to_float(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    float magnitude = static_cast<float>(mantissa) * bits_to_float(0x33800000u);  // 2^-24
    return sign ? -magnitude : magnitude;
  }
  return bits_to_float(sign | ((exponent + 112) << 23) | (mantissa << 13));  // rebias 15 -> 127
}

inline uint16_t float_to_f16(float f) {
  uint32_t bits = float_to_bits(f);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00u;         // NaN
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;        // rounds to >= 65520: inf
  if (magnitude < 0x38800000u) {
    // Below the smallest normal half (2^-14): a subnormal or zero. Adding
    // 0.5 makes the float's own rounding (to nearest even) do the work:
    // the sum's low mantissa bits are the half's subnormal mantissa.
    float rounded = bits_to_float(magnitude) + 0.5f;
    return sign | static_cast<uint16_t>(float_to_bits(rounded) - float_to_bits(0.5f));
  }
  uint32_t rounding = 0xfffu + ((magnitude >> 13) & 1u);  // ties to even
  return sign | static_cast<uint16_t>((magnitude - (112u << 23) + rounding) >> 13);
}

}  // namespace aotirt
