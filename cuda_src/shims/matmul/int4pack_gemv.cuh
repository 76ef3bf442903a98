// _weight_int4pack_mm for a few rows (decode): memory bound on the packed
// weight, so each block streams one n tile's k contiguous words (8 columns)
// with coalesced 128-bit loads, every thread keeping float sums for its one
// column and every row, then lanes and warps add up through shuffles and
// shared memory in a fixed order (the result does not depend on timing).
//
// Why a thread keeps one column: a 16-byte vector at vector index v holds
// words 4v .. 4v + 3, all of one column ((4v mod 16 INNER) / (2 INNER), see
// int4pack_dequant.cuh), and a thread's v only moves in steps of the block
// size, a multiple of 32 vectors, which is a whole number of periods of that
// column pattern (8, 16 or 32 vectors for INNER 2, 4, 8).
//
// Preconditions (the caller's): the weight 16-byte aligned, A and the scales
// 4-byte aligned, m <= kGemvMaxRows, k a multiple of 32 (the shim's checks).

#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "shims/matmul/int4pack_dequant.cuh"

namespace aotirt {
namespace int4pack {

// Up to two rows: at three and more the tensor-core kernel was faster (H200,
// n = k = 4096: 8.2 us here against 9.9 there for one row, equal at two).
constexpr int kGemvThreads = 256, kGemvMaxRows = 2, kGemvUnroll = 4;

template <int INNER, int M>
__global__ void __launch_bounds__(kGemvThreads)
    gemv(const uint32_t* a_pairs, const int32_t* packed, const uint32_t* scale_zero, __nv_bfloat16* c, int n, int k,
         int group_shift) {
  __shared__ float partial[kGemvThreads / 32][8][M];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int n_tile = blockIdx.x, vectors = k / 4, k_pairs = k / 2;
  const uint4* words = reinterpret_cast<const uint4*>(packed + int64_t{n_tile} * k);
  const int col = place_of<INNER>(4 * lane).col, column = n_tile * 8 + col;
  float acc[M] = {};
  for (int v0 = threadIdx.x; v0 < vectors; v0 += kGemvThreads * kGemvUnroll) {
    uint4 q[kGemvUnroll];  // every load first, so that they are all in flight together
#pragma unroll
    for (int u = 0; u < kGemvUnroll; ++u) {
      const int v = v0 + u * kGemvThreads;
      q[u] = v < vectors ? __ldg(words + v) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kGemvUnroll; ++u) {
      const int v = v0 + u * kGemvThreads;
      if (v >= vectors) break;
      const uint32_t w[4] = {q[u].x, q[u].y, q[u].z, q[u].w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int k0 = place_of<INNER>(4 * v + e).k;
        const uint32_t sz = __ldg(scale_zero + int64_t{k0 >> group_shift} * n + column);
        __nv_bfloat162 pairs[4];
        dequant_word(w[e], sz, pairs);
#pragma unroll
        for (int p = 0; p < 4; ++p) {
          const uint32_t wp = bits_of(pairs[p]);
          const float w_lo = low_float(wp), w_hi = high_float(wp);
          const int kp = k0 / 2 + 4 * p;  // pair (k0 + 8p, k0 + 8p + 1)
#pragma unroll
          for (int m = 0; m < M; ++m) {
            const uint32_t x = __ldg(a_pairs + m * k_pairs + kp);
            acc[m] = fmaf(low_float(x), w_lo, acc[m]);
            acc[m] = fmaf(high_float(x), w_hi, acc[m]);
          }
        }
      }
    }
  }
  // The lanes that share this lane's column differ from it in two lane bits.
  constexpr int kBit1 = INNER == 2 ? 8 : 1, kBit2 = INNER == 8 ? 2 : 16;
#pragma unroll
  for (int m = 0; m < M; ++m) {
    acc[m] += __shfl_xor_sync(0xFFFFFFFFu, acc[m], kBit1);
    acc[m] += __shfl_xor_sync(0xFFFFFFFFu, acc[m], kBit2);
  }
  if ((lane & (kBit1 | kBit2)) == 0) {
#pragma unroll
    for (int m = 0; m < M; ++m) partial[warp][col][m] = acc[m];
  }
  __syncthreads();
  if (threadIdx.x < 8 * M) {
    const int cc = threadIdx.x / M, m = threadIdx.x % M;
    float sum = 0.0f;
#pragma unroll
    for (int w = 0; w < kGemvThreads / 32; ++w) sum += partial[w][cc][m];
    c[int64_t{m} * n + n_tile * 8 + cc] = __float2bfloat16_rn(sum);
  }
}

template <int INNER, int M>
void launch_gemv_rows(const uint32_t* a, const int32_t* packed, const uint32_t* sz, __nv_bfloat16* c, int n, int k,
                      int group_shift, cudaStream_t stream) {
  gemv<INNER, M><<<n / 8, kGemvThreads, 0, stream>>>(a, packed, sz, c, n, k, group_shift);
}

template <int INNER>
void launch_gemv_inner(int m, const uint32_t* a, const int32_t* packed, const uint32_t* sz, __nv_bfloat16* c, int n,
                       int k, int group_shift, cudaStream_t stream) {
  static_assert(kGemvMaxRows == 2, "one instantiation per row count");
  if (m == 1) return launch_gemv_rows<INNER, 1>(a, packed, sz, c, n, k, group_shift, stream);
  return launch_gemv_rows<INNER, 2>(a, packed, sz, c, n, k, group_shift, stream);
}

// m in 1 .. kGemvMaxRows, inner 2, 4 or 8, n a multiple of 8 and > 0.
inline void launch_gemv(int m, int inner, const uint32_t* a, const int32_t* packed, const uint32_t* sz,
                        __nv_bfloat16* c, int n, int k, int group_shift, cudaStream_t stream) {
  with_inner(inner, [&](auto tiles) {
    launch_gemv_inner<decltype(tiles)::value>(m, a, packed, sz, c, n, k, group_shift, stream);
  });
}

}  // namespace int4pack
}  // namespace aotirt
