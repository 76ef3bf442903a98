// The packed int4 weight's word addressing and dequantisation, shared by the
// fast _weight_int4pack_mm kernels (int4pack_decode.cuh, int4pack_mma.cuh).
// int4pack_cuda.cu's header comment describes the layout; in short, word
// [nt][ko][t][j] of int32 [n / 8][k / (INNER * 16)][32][INNER / 2] is column
// nt * 8 + t / 4 at k tiles kt0 = ko * INNER + 2j and kt0 + 1, and its nibble
// pairs (0, 4), (1, 5), (2, 6), (3, 7) are the k pairs (c, c + 1), (c + 8,
// c + 9), (c + 16, c + 17), (c + 24, c + 25) from kt0 * 16 (c = 2 * (t % 4)):
// exactly the m16n8k16 B fragments b0, b1 of tile kt0, then of kt0 + 1.
//
// One n tile's words are contiguous: k / (INNER * 16) * 32 * INNER / 2 = k
// words, so n tile nt starts at word nt * k.

#pragma once

#include <cuda_bf16.h>

#include <cstdint>
#include <type_traits>

namespace aotirt {
namespace int4pack {

// fn(std::integral_constant<int, INNER>) for the weight's inner k tiles, 2, 4
// or 8 (the shim checks): the launchers' one switch from the run-time value
// to their kernels' template argument.
template <typename Fn>
void with_inner(int inner, Fn&& fn) {
  if (inner == 2) return fn(std::integral_constant<int, 2>{});
  if (inner == 4) return fn(std::integral_constant<int, 4>{});
  return fn(std::integral_constant<int, 8>{});
}

// Where word w of an n tile's k words sits: its column within the tile and
// the first k (kt0 * 16 + c) of its four k pairs.
struct WordPlace {
  int col, k;
};

template <int INNER>
__device__ __forceinline__ WordPlace place_of(int w) {
  constexpr int kPerOuter = INNER * 16;  // words per k-outer tile, as k values
  const int ko = w / kPerOuter, r = w % kPerOuter;
  const int t = r / (INNER / 2), j = r % (INNER / 2);
  return {t / 4, (ko * INNER + 2 * j) * 16 + 2 * (t % 4)};
}

// The four bfloat16 pairs of one word, each (k, k + 1), dequantised as torch's
// tinygemm does: (q - 8) * scale + zero in one bfloat16 fma (__hfma2, a single
// rounding). `scale_zero` is the (scale, zero) pair as one 32-bit word, scale
// in its low half (the [.][n][2] array's element 0).
//   0x4300 | q is the bfloat16 128 + q (q < 16 fits the 7-bit mantissa), so
// subtracting 136 leaves q - 8 exactly.
__device__ __forceinline__ void dequant_word(uint32_t word, uint32_t scale_zero, __nv_bfloat162 out[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  // No bfloat16 arithmetic below sm_80: an AOTIRT_CUDA_ARCHS with such a
  // target must still compile, and the shim never launches these kernels there.
  for (int p = 0; p < 4; ++p) out[p] = __nv_bfloat162{};
#else
  const uint32_t s2 = __byte_perm(scale_zero, 0, 0x1010), z2 = __byte_perm(scale_zero, 0, 0x3232);
  const __nv_bfloat162 scale = *reinterpret_cast<const __nv_bfloat162*>(&s2);
  const __nv_bfloat162 zero = *reinterpret_cast<const __nv_bfloat162*>(&z2);
  const uint32_t bias_bits = 0x43084308u;  // bfloat16 136, twice
  const __nv_bfloat162 bias = *reinterpret_cast<const __nv_bfloat162*>(&bias_bits);
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const uint32_t bits = ((word >> (4 * p)) & 0x000F000Fu) | 0x43004300u;
    const __nv_bfloat162 shifted = *reinterpret_cast<const __nv_bfloat162*>(&bits);
    out[p] = __hfma2(__hsub2(shifted, bias), scale, zero);
  }
#endif
}

__device__ __forceinline__ uint32_t bits_of(__nv_bfloat162 v) { return *reinterpret_cast<const uint32_t*>(&v); }
__device__ __forceinline__ float low_float(uint32_t pair) { return __uint_as_float(pair << 16); }
__device__ __forceinline__ float high_float(uint32_t pair) { return __uint_as_float(pair & 0xFFFF0000u); }

}  // namespace int4pack
}  // namespace aotirt
