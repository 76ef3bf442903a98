// _weight_int4pack_mm for many rows (prefill) on the tensor cores: the packed
// weight already is the m16n8k16 B-fragment layout, so each lane loads its own
// words for a k-outer tile (one coalesced vector load per n tile), dequantises
// them in registers into the B fragments (int4pack_dequant.cuh) and runs
// mma.sync bfloat16 -> float against A fragments read straight from global
// memory (A is small and shared by every block, so it stays in L2 / L1).
//
// A block owns 16 * MT rows and NT n tiles; its kMmaWarps warps split k (warp
// w takes k-outer tiles w, w + kMmaWarps, ...), each loading its next tile's
// words before it works on the current one (a load is in flight while the
// tensor cores run), then add their float sums into shared memory one warp
// after another, a fixed order. Four n tiles a block was faster than one or
// two at every row count measured (1 to 256 rows, n = k = 4096, an H200).
//
// Preconditions (the caller's): sm_80 or later, the weight aligned to
// INNER * 2 bytes, A and the scales 4-byte aligned.

#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "shims/matmul/int4pack_dequant.cuh"

namespace aotirt {
namespace int4pack {

constexpr int kMmaWarps = 8, kMmaThreads = kMmaWarps * 32, kMmaNTiles = 4;

__device__ __forceinline__ void mma_bf16(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800  // the instruction is sm_80's; never launched below (the shim)
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// One lane's INNER / 2 words of a k-outer tile, in one vector load.
template <int INNER>
__device__ __forceinline__ void load_words(const int32_t* p, uint32_t w[INNER / 2]) {
  if constexpr (INNER == 8) {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
  } else if constexpr (INNER == 4) {
    const uint2 v = __ldg(reinterpret_cast<const uint2*>(p));
    w[0] = v.x, w[1] = v.y;
  } else {
    w[0] = __ldg(reinterpret_cast<const uint32_t*>(p));
  }
}

template <int INNER, int MT, int NT>
__global__ void __launch_bounds__(kMmaThreads)
    mma_mm(const uint32_t* a_pairs, const int32_t* packed, const uint32_t* scale_zero, __nv_bfloat16* c, int m, int n,
           int k, int group_shift) {
  constexpr int kRows = 16 * MT, kCols = 8 * NT;
  __shared__ float sums[kRows][kCols + 1];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, c2 = 2 * (lane % 4);  // the fragments' row / column within a tile
  const int row0 = blockIdx.y * kRows, nt0 = blockIdx.x * NT;
  const int n_tiles = n / 8, k_outer = k / (INNER * 16), k_pairs = k / 2;
  float acc[MT][NT][4] = {};
  // This lane's words of k-outer tile ko for the block's n tiles (zero past
  // the last n tile or the last k-outer tile).
  auto load_tile = [&](int ko, uint32_t (&into)[NT][INNER / 2]) {
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      if (nt0 + t < n_tiles && ko < k_outer) {
        load_words<INNER>(packed + ((int64_t{nt0 + t} * k_outer + ko) * 32 + lane) * (INNER / 2), into[t]);
      } else {
#pragma unroll
        for (int j = 0; j < INNER / 2; ++j) into[t][j] = 0;
      }
    }
  };
  uint32_t next[NT][INNER / 2];
  load_tile(warp, next);
  for (int ko = warp; ko < k_outer; ko += kMmaWarps) {
    uint32_t words[NT][INNER / 2];
#pragma unroll
    for (int t = 0; t < NT; ++t) {
#pragma unroll
      for (int j = 0; j < INNER / 2; ++j) words[t][j] = next[t][j];
    }
    load_tile(ko + kMmaWarps, next);
#pragma unroll
    for (int j = 0; j < INNER / 2; ++j) {
      const int kb = (ko * INNER + 2 * j) * 16;  // first k of this word's two k tiles, both in one group
      uint32_t b[NT][4];
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        const uint32_t sz =
            nt0 + t < n_tiles ? __ldg(scale_zero + int64_t{kb >> group_shift} * n + (nt0 + t) * 8 + g) : 0u;
        __nv_bfloat162 pairs[4];
        dequant_word(words[t][j], sz, pairs);
#pragma unroll
        for (int p = 0; p < 4; ++p) b[t][p] = bits_of(pairs[p]);
      }
#pragma unroll
      for (int half = 0; half < 2; ++half) {  // k tile kt0, then kt0 + 1
        const int kp = (kb + 16 * half + c2) / 2;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          const int r0 = row0 + mt * 16 + g, r1 = r0 + 8;
          uint32_t af[4];
          af[0] = r0 < m ? __ldg(a_pairs + r0 * k_pairs + kp) : 0u;
          af[1] = r1 < m ? __ldg(a_pairs + r1 * k_pairs + kp) : 0u;
          af[2] = r0 < m ? __ldg(a_pairs + r0 * k_pairs + kp + 4) : 0u;  // k + 8
          af[3] = r1 < m ? __ldg(a_pairs + r1 * k_pairs + kp + 4) : 0u;
#pragma unroll
          for (int t = 0; t < NT; ++t) mma_bf16(acc[mt][t], af, b[t][2 * half], b[t][2 * half + 1]);
        }
      }
    }
  }
  for (int w = 0; w < kMmaWarps; ++w) {
    if (warp == w) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          const int r = mt * 16 + g, cc = t * 8 + c2;
          float* top = &sums[r][cc];
          float* bottom = &sums[r + 8][cc];
          if (w == 0) {
            top[0] = acc[mt][t][0], top[1] = acc[mt][t][1], bottom[0] = acc[mt][t][2], bottom[1] = acc[mt][t][3];
          } else {
            top[0] += acc[mt][t][0], top[1] += acc[mt][t][1], bottom[0] += acc[mt][t][2], bottom[1] += acc[mt][t][3];
          }
        }
      }
    }
    __syncthreads();
  }
  for (int e = threadIdx.x; e < kRows * kCols; e += kMmaThreads) {
    const int r = e / kCols, cc = e % kCols, row = row0 + r, col = nt0 * 8 + cc;
    if (row < m && col < n) c[int64_t{row} * n + col] = __float2bfloat16_rn(sums[r][cc]);
  }
}

template <int INNER, int MT, int NT>
void launch_mma_tiles(int m, const uint32_t* a, const int32_t* packed, const uint32_t* sz, __nv_bfloat16* c, int n,
                      int k, int group_shift, cudaStream_t stream) {
  const dim3 grid((n / 8 + NT - 1) / NT, (m + 16 * MT - 1) / (16 * MT));
  mma_mm<INNER, MT, NT><<<grid, kMmaThreads, 0, stream>>>(a, packed, sz, c, m, n, k, group_shift);
}

template <int INNER>
void launch_mma_inner(int m, const uint32_t* a, const int32_t* packed, const uint32_t* sz, __nv_bfloat16* c, int n,
                      int k, int group_shift, cudaStream_t stream) {
  constexpr int kN = kMmaNTiles;
  if (m <= 16) return launch_mma_tiles<INNER, 1, kN>(m, a, packed, sz, c, n, k, group_shift, stream);
  if (m <= 32) return launch_mma_tiles<INNER, 2, kN>(m, a, packed, sz, c, n, k, group_shift, stream);
  return launch_mma_tiles<INNER, 4, kN>(m, a, packed, sz, c, n, k, group_shift, stream);
}

// The grid's row count, for the caller's check against the 65535 limit.
inline int64_t mma_row_blocks(int64_t m) { return m <= 32 ? 1 : (m + 63) / 64; }

// m >= 1, inner 2, 4 or 8, n a multiple of 8 and > 0.
inline void launch_mma(int m, int inner, const uint32_t* a, const int32_t* packed, const uint32_t* sz,
                       __nv_bfloat16* c, int n, int k, int group_shift, cudaStream_t stream) {
  with_inner(inner, [&](auto tiles) {
    launch_mma_inner<decltype(tiles)::value>(m, a, packed, sz, c, n, k, group_shift, stream);
  });
}

}  // namespace int4pack
}  // namespace aotirt
