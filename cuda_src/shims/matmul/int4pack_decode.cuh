// _weight_int4pack_mm for a few rows (decode) on the tensor cores, shaped as
// torch's tinygemm kernel is for m = 1 (a block of 8 warps per n tile, the
// warps splitting k): one block per n tile of 8 columns, its warps taking
// kDecodeBatch consecutive k-outer tiles at a time. A lane first issues every
// load of a batch, its weight words and the (scale, zero) pair of each word,
// so that one trip to memory covers the batch (the GEMV, int4pack_gemv.cuh,
// fetches the scales only after the words arrive: two trips), then
// dequantises the words into m16n8k16 B fragments and runs mma.sync against
// the activation rows (rows g and g + 8 of the A fragment, zero past m). The
// warps' float sums are added in warp order through shared memory, so the
// result does not depend on timing.
//
// Preconditions (the caller's): sm_80 or later, m <= kDecodeMaxRows, the
// weight aligned to INNER * 2 bytes, A and the scales 4-byte aligned.

#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "shims/matmul/int4pack_dequant.cuh"
#include "shims/matmul/int4pack_mma.cuh"

namespace aotirt {
namespace int4pack {

constexpr int kDecodeWarps = 8, kDecodeThreads = kDecodeWarps * 32, kDecodeBatch = 4, kDecodeMaxRows = 16;
// Four blocks an SM (64 registers a thread, as torch's kernel has): 528
// resident blocks on an H200's 132 SMs, so a 4096-column weight (512 n
// tiles) is one wave; at the 80 registers left free it took two.
constexpr int kDecodeBlocksPerSm = 4;

template <int INNER>
__global__ void __launch_bounds__(kDecodeThreads, kDecodeBlocksPerSm)
    decode_mm(const uint32_t* a_pairs, const int32_t* packed, const uint32_t* scale_zero, __nv_bfloat16* c, int m,
              int n, int k, int group_shift) {
  constexpr int kWords = INNER / 2;  // a lane's words of one k-outer tile
  __shared__ float partial[kDecodeWarps][16][8];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, c2 = 2 * (lane % 4);  // the fragments' row / column within a tile
  const int n_tile = blockIdx.x, column = n_tile * 8 + g, k_outer = k / (INNER * 16), k_pairs = k / 2;
  const int32_t* tile_words = packed + int64_t{n_tile} * k;  // one n tile's k words are contiguous
  const bool row0 = g < m, row1 = g + 8 < m;
  float acc[4] = {};
  for (int ko0 = warp * kDecodeBatch; ko0 < k_outer; ko0 += kDecodeWarps * kDecodeBatch) {
    uint32_t words[kDecodeBatch][kWords], sz[kDecodeBatch][kWords];
#pragma unroll
    for (int b = 0; b < kDecodeBatch; ++b) {
      const int ko = ko0 + b;
      if (ko < k_outer) {
        load_words<INNER>(tile_words + (int64_t{ko} * 32 + lane) * kWords, words[b]);
#pragma unroll
        for (int j = 0; j < kWords; ++j) {
          const int kb = (ko * INNER + 2 * j) * 16;
          sz[b][j] = __ldg(scale_zero + int64_t{kb >> group_shift} * n + column);
        }
      } else {
#pragma unroll
        for (int j = 0; j < kWords; ++j) words[b][j] = sz[b][j] = 0;
      }
    }
#pragma unroll
    for (int b = 0; b < kDecodeBatch; ++b) {
      const int ko = ko0 + b;
      if (ko >= k_outer) break;
#pragma unroll
      for (int j = 0; j < kWords; ++j) {
        const int kb = (ko * INNER + 2 * j) * 16;  // first k of this word's two k tiles
        __nv_bfloat162 pairs[4];
        dequant_word(words[b][j], sz[b][j], pairs);
#pragma unroll
        for (int half = 0; half < 2; ++half) {  // k tile kt0, then kt0 + 1
          const int kp = (kb + 16 * half + c2) / 2;
          uint32_t af[4];
          af[0] = row0 ? __ldg(a_pairs + g * k_pairs + kp) : 0u;
          af[1] = row1 ? __ldg(a_pairs + (g + 8) * k_pairs + kp) : 0u;
          af[2] = row0 ? __ldg(a_pairs + g * k_pairs + kp + 4) : 0u;  // k + 8
          af[3] = row1 ? __ldg(a_pairs + (g + 8) * k_pairs + kp + 4) : 0u;
          mma_bf16(acc, af, bits_of(pairs[2 * half]), bits_of(pairs[2 * half + 1]));
        }
      }
    }
  }
  partial[warp][g][c2] = acc[0], partial[warp][g][c2 + 1] = acc[1];
  partial[warp][g + 8][c2] = acc[2], partial[warp][g + 8][c2 + 1] = acc[3];
  __syncthreads();
  if (threadIdx.x < 16 * 8) {
    const int r = threadIdx.x / 8, cc = threadIdx.x % 8;
    if (r < m) {
      float sum = 0.0f;
#pragma unroll
      for (int w = 0; w < kDecodeWarps; ++w) sum += partial[w][r][cc];
      c[int64_t{r} * n + n_tile * 8 + cc] = __float2bfloat16_rn(sum);
    }
  }
}

// m in 1 .. kDecodeMaxRows, inner 2, 4 or 8, n a multiple of 8 and > 0.
inline void launch_decode(int m, int inner, const uint32_t* a, const int32_t* packed, const uint32_t* sz,
                          __nv_bfloat16* c, int n, int k, int group_shift, cudaStream_t stream) {
  with_inner(inner, [&](auto tiles) {
    decode_mm<decltype(tiles)::value><<<n / 8, kDecodeThreads, 0, stream>>>(a, packed, sz, c, m, n, k, group_shift);
  });
}

}  // namespace int4pack
}  // namespace aotirt
