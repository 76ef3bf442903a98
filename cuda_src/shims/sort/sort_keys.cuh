// Radix keys for torch's sort order: each element becomes an unsigned
// integer whose plain order is torch's order of the elements, so that an
// (always stable) radix sort of the keys sorts the elements as torch does:
//  - floating values: the IEEE bits with the sign bit flipped for positive
//    numbers and every bit flipped for negative ones (the usual radix
//    transform), -0.0 taken as 0.0 (torch's comparisons see them equal, so
//    a stable sort keeps them in input order) and every NaN as all ones,
//    above +inf (torch sorts NaN as the largest value, all NaNs equal);
//  - signed integers: the bits with the sign bit flipped; unsigned and bool
//    as they are (a bool byte as 0 or 1);
//  - descending: the key's bits inverted (within its `bits`), which reverses
//    the order and keeps equal keys equal, so ties stay in input order.
// 8-bit types and bool use 16-bit keys of which only the low 8 bits sort, so
// that one CUB instance covers every 1- and 2-byte type.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace aotirt {
namespace sort {

template <typename T>
struct Radix;  // using Key; static constexpr int bits; static Key key(T)

template <typename U>
__device__ __forceinline__ U flip_float(U bits, U sign) {
  return (bits & sign) ? static_cast<U>(~bits) : static_cast<U>(bits | sign);
}

template <>
struct Radix<float> {
  using Key = uint32_t;
  static constexpr int bits = 32;
  __device__ static Key key(float v) {
    if (v != v) return 0xFFFFFFFFu;
    return flip_float<Key>(v == 0.0f ? 0u : __float_as_uint(v), 0x80000000u);
  }
};

template <>
struct Radix<double> {
  using Key = uint64_t;
  static constexpr int bits = 64;
  __device__ static Key key(double v) {
    if (v != v) return ~0ull;
    return flip_float<Key>(v == 0.0 ? 0ull : static_cast<Key>(__double_as_longlong(v)), 0x8000000000000000ull);
  }
};

// float16 and bfloat16 from their bits: NaN is an all-ones exponent with a
// nonzero mantissa, zero has no bit set but the sign.
template <uint16_t kInfinity>
__device__ __forceinline__ uint16_t half_key(uint16_t b) {
  const uint16_t magnitude = b & 0x7FFF;
  if (magnitude > kInfinity) return 0xFFFF;
  return flip_float<uint16_t>(magnitude == 0 ? 0 : b, 0x8000);
}

template <>
struct Radix<__half> {
  using Key = uint16_t;
  static constexpr int bits = 16;
  __device__ static Key key(__half v) { return half_key<0x7C00>(__half_as_ushort(v)); }
};

template <>
struct Radix<__nv_bfloat16> {
  using Key = uint16_t;
  static constexpr int bits = 16;
  __device__ static Key key(__nv_bfloat16 v) { return half_key<0x7F80>(__bfloat16_as_ushort(v)); }
};

template <typename T, typename K, int kBits>
struct IntegerRadix {
  using Key = K;
  static constexpr int bits = kBits;
  __device__ static Key key(T v) {
    using U = std::make_unsigned_t<T>;
    const U u = static_cast<U>(v);
    if constexpr (std::is_signed_v<T>) return static_cast<Key>(static_cast<U>(u ^ (U{1} << (sizeof(T) * 8 - 1))));
    return static_cast<Key>(u);
  }
};

template <> struct Radix<int8_t> : IntegerRadix<int8_t, uint16_t, 8> {};
template <> struct Radix<uint8_t> : IntegerRadix<uint8_t, uint16_t, 8> {};
template <> struct Radix<int16_t> : IntegerRadix<int16_t, uint16_t, 16> {};
template <> struct Radix<int32_t> : IntegerRadix<int32_t, uint32_t, 32> {};
template <> struct Radix<int64_t> : IntegerRadix<int64_t, uint64_t, 64> {};

template <>
struct Radix<bool> {
  using Key = uint16_t;
  static constexpr int bits = 8;
  __device__ static Key key(bool v) { return v ? 1 : 0; }
};

// The key of `v` for an ascending or a descending sort.
template <typename T>
__device__ __forceinline__ typename Radix<T>::Key sort_key(T v, bool descending) {
  using Key = typename Radix<T>::Key;
  constexpr int bits = Radix<T>::bits;
  constexpr Key mask = bits == sizeof(Key) * 8 ? static_cast<Key>(~Key{0}) : static_cast<Key>((Key{1} << bits) - 1);
  const Key k = Radix<T>::key(v);
  return descending ? static_cast<Key>(~k & mask) : k;
}

}  // namespace sort
}  // namespace aotirt
