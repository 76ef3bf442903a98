// _weight_int4pack_mm for a few rows (decode and short prompts, m <=
// kDecodeMaxRows) on the tensor cores, with the weight as the A operand:
// C^T = W X^T.
//
// Why the weight is A: an m16n8k16 A fragment is 16 rows, and a lane's
// packed words (int4pack_dequant.cuh) are already the fragment of its own
// column, so the rows of one A fragment are the 8 columns of two n tiles, and
// the activations' rows are B's 8 columns: up to 8 rows take one mma per
// fragment, up to 16 two (ROW_TILES, the second B over rows 8 to 15, the
// dequantised A fragment reused). With the activations as A, most of its 16
// rows would be padding. Each lane dequantises as torch's tinygemm does (one
// bfloat16 fma per pair, with the (scale, zero) of its own column), so the
// products are torch's.
//
// Shape of the work: one block of kDecodeWarps warps per pair of n tiles,
// the warps splitting k, each taking BATCH consecutive k-outer tiles at a
// time. Everything the block needs is requested at once before any of it is
// used, so the kernel pays about one trip to memory: the activations are
// copied into shared memory with cp.async (issued first, no registers held),
// then every lane loads its batch's weight words and their (scale, zero)
// pairs. Measured on an H200 against torch's kernel (bench/runs/
// s12-int4-decode.md): 5.9 against 6.4 us for 1x4096 @ 4096x4096, where
// reading the activations from global memory inside the mma loop took 8.9.
// The warps' float sums are added in warp order through shared memory, so
// the result does not depend on timing.
//
// Preconditions (the caller's: decode_fits for the first two, kernel_for in
// int4pack_cuda.cu for the rest): 1 <= m <= kDecodeMaxRows, m * k * 2 <=
// kDecodeSharedBytes, sm_80 or later, A 16-byte aligned (its cp.async copy),
// the weight aligned to INNER * 2 bytes, the scales 4-byte aligned.

#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "shims/matmul/int4pack_dequant.cuh"
#include "shims/matmul/int4pack_mma.cuh"
#include "shims/shared_memory_opt_in.cuh"

namespace aotirt {
namespace int4pack {

constexpr int kDecodeWarps = 8, kDecodeThreads = kDecodeWarps * 32, kDecodeMaxRows = 16;
// The staged activations' room: 8 rows of k = 4096, 16 of k = 2048. Past 48 KiB a kernel
// must opt in; 64 KiB is within every sm_80+ part's opt-in limit (99 KiB on
// sm_86 / sm_89, 227 on sm_90).
constexpr int kDecodeSharedBytes = 64 * 1024;

inline bool decode_fits(int64_t m, int64_t k) {
  return m >= 1 && m <= kDecodeMaxRows && m * k * 2 <= kDecodeSharedBytes;
}

__device__ __forceinline__ void copy_16_bytes_async(void* to_shared, const void* from_global) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800  // sm_80's instruction; never launched below (the shim)
  const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(to_shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(to), "l"(from_global));
#endif
}

__device__ __forceinline__ void wait_for_async_copies() {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
  asm volatile("cp.async.wait_group 0;\n" ::);
#endif
}

template <int INNER, int BATCH, int ROW_TILES>
__global__ void __launch_bounds__(kDecodeThreads)
    decode_mm(const uint32_t* a_pairs, const int32_t* packed, const uint32_t* scale_zero, __nv_bfloat16* c, int m,
              int n, int k, int group_shift) {
  constexpr int kWords = INNER / 2;  // a lane's words of one k-outer tile
  constexpr int kSums = 4 * ROW_TILES;  // a lane's accumulators
  extern __shared__ uint4 staged_vectors[];  // A, as bfloat16 pairs [m][k / 2]
  __shared__ float partial[kDecodeWarps][32][kSums];
  const uint32_t* staged = reinterpret_cast<const uint32_t*>(staged_vectors);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, c2 = 2 * (lane % 4);  // the fragments' row / column within a tile
  const int n_tiles = n / 8, k_outer = k / (INNER * 16), k_pairs = k / 2;
  for (int i = threadIdx.x; i < m * k_pairs / 4; i += kDecodeThreads)
    copy_16_bytes_async(staged_vectors + i, reinterpret_cast<const uint4*>(a_pairs) + i);
  // A's rows g and g + 8: column g of n tiles nt0 and nt1. Past the last n
  // tile, nt1 repeats nt0 (valid addresses) and its sums are not stored.
  const int nt0 = 2 * blockIdx.x;
  const bool has_second = nt0 + 1 < n_tiles;
  const int nt1 = has_second ? nt0 + 1 : nt0;
  const int32_t* words0 = packed + int64_t{nt0} * k;  // one n tile's k words are contiguous
  const int32_t* words1 = packed + int64_t{nt1} * k;
  const int col0 = nt0 * 8 + g, col1 = nt1 * 8 + g;
  // Column g of row tile r's B is activation row 8 * r + g; columns past m
  // repeat the last row and are not stored.
  const uint32_t* x_rows[ROW_TILES];
#pragma unroll
  for (int r = 0; r < ROW_TILES; ++r) x_rows[r] = staged + min(8 * r + g, m - 1) * k_pairs;
  float acc[ROW_TILES][4] = {};
  const int rounds = (k_outer + kDecodeWarps * BATCH - 1) / (kDecodeWarps * BATCH);  // the same for every warp
  for (int round = 0; round < rounds; ++round) {
    const int ko_first = (round * kDecodeWarps + warp) * BATCH;
    uint32_t w0[BATCH][kWords], w1[BATCH][kWords], sz0[BATCH][kWords], sz1[BATCH][kWords];
#pragma unroll
    for (int b = 0; b < BATCH; ++b) {
      const int ko = ko_first + b;
      if (ko < k_outer) {
        load_words<INNER>(words0 + (ko * 32 + lane) * kWords, w0[b]);
        load_words<INNER>(words1 + (ko * 32 + lane) * kWords, w1[b]);
#pragma unroll
        for (int j = 0; j < kWords; ++j) {
          const int64_t group_row = int64_t{((ko * INNER + 2 * j) * 16) >> group_shift} * n;
          sz0[b][j] = __ldg(scale_zero + group_row + col0);
          sz1[b][j] = __ldg(scale_zero + group_row + col1);
        }
      } else {
#pragma unroll
        for (int j = 0; j < kWords; ++j) w0[b][j] = w1[b][j] = sz0[b][j] = sz1[b][j] = 0;
      }
    }
    if (round == 0) {
      wait_for_async_copies();
      __syncthreads();
    }
#pragma unroll
    for (int b = 0; b < BATCH; ++b) {
      const int ko = ko_first + b;
      if (ko >= k_outer) break;
#pragma unroll
      for (int j = 0; j < kWords; ++j) {
        const int kb = (ko * INNER + 2 * j) * 16;  // first k of this word's two k tiles
        __nv_bfloat162 p0[4], p1[4];
        dequant_word(w0[b][j], sz0[b][j], p0);
        dequant_word(w1[b][j], sz1[b][j], p1);
#pragma unroll
        for (int half = 0; half < 2; ++half) {  // k tile kt0, then kt0 + 1
          const uint32_t a[4] = {bits_of(p0[2 * half]), bits_of(p1[2 * half]), bits_of(p0[2 * half + 1]),
                                 bits_of(p1[2 * half + 1])};
          const int kp = (kb + 16 * half + c2) / 2;
#pragma unroll
          for (int r = 0; r < ROW_TILES; ++r)  // B: k c2, c2 + 1 and c2 + 8, c2 + 9 of B's column g
            mma_bf16(acc[r], a, x_rows[r][kp], x_rows[r][kp + 4]);
        }
      }
    }
  }
  // acc[r]: C rows g (column col0) and g + 8 (col1), C columns c2, c2 + 1
  // of row tile r (activation rows 8 * r + c2, 8 * r + c2 + 1).
#pragma unroll
  for (int r = 0; r < ROW_TILES; ++r)
#pragma unroll
    for (int v = 0; v < 4; ++v) partial[warp][lane][4 * r + v] = acc[r][v];
  __syncthreads();
  if (threadIdx.x < 32 * kSums) {
    const int l = threadIdx.x / kSums, s = threadIdx.x % kSums, v = s % 4;
    float sum = 0.0f;
#pragma unroll
    for (int w = 0; w < kDecodeWarps; ++w) sum += partial[w][l][s];
    const int row = 8 * (s / 4) + 2 * (l % 4) + (v & 1);
    const bool second = v >= 2;
    if (row < m && (!second || has_second))
      c[int64_t{row} * n + (second ? nt1 : nt0) * 8 + l / 4] = __float2bfloat16_rn(sum);
  }
}

template <int INNER, int BATCH, int ROW_TILES>
cudaError_t launch_decode_batch(int device, int m, const uint32_t* a, const int32_t* packed, const uint32_t* sz,
                                __nv_bfloat16* c, int n, int k, int group_shift, cudaStream_t stream) {
  const cudaError_t allowed =
      allow_dynamic_shared_memory<decode_mm<INNER, BATCH, ROW_TILES>>(device, kDecodeSharedBytes);
  if (allowed != cudaSuccess) return allowed;
  const int blocks = (n / 8 + 1) / 2;
  decode_mm<INNER, BATCH, ROW_TILES><<<blocks, kDecodeThreads, size_t(m) * k * 2, stream>>>(a, packed, sz, c, m, n,
                                                                                           k, group_shift);
  return cudaGetLastError();
}

template <int INNER, int ROW_TILES>
cudaError_t launch_decode_rows(int device, int multiprocessors, int m, const uint32_t* a, const int32_t* packed,
                               const uint32_t* sz, __nv_bfloat16* c, int n, int k, int group_shift,
                               cudaStream_t stream) {
  // Few k-outer tiles: one each for as many warps, so that no warp runs a
  // long chain of mma while the others idle. Otherwise a batch of four a
  // warp is faster while the grid is one wave of it (two blocks an SM at
  // INNER 8's 96 registers), two past that: on an H200, 4096 columns 5.9
  // against 6.3 us, 11008 columns 14.6 against 14.0.
  if (k / (INNER * 16) <= kDecodeWarps)
    return launch_decode_batch<INNER, 1, ROW_TILES>(device, m, a, packed, sz, c, n, k, group_shift, stream);
  if ((n / 8 + 1) / 2 <= 2 * multiprocessors)
    return launch_decode_batch<INNER, 4, ROW_TILES>(device, m, a, packed, sz, c, n, k, group_shift, stream);
  return launch_decode_batch<INNER, 2, ROW_TILES>(device, m, a, packed, sz, c, n, k, group_shift, stream);
}

// decode_fits(m, k), inner 2, 4 or 8, n a multiple of 8 and > 0.
inline cudaError_t launch_decode(int device, int multiprocessors, int m, int inner, const uint32_t* a,
                                 const int32_t* packed, const uint32_t* sz, __nv_bfloat16* c, int n, int k,
                                 int group_shift, cudaStream_t stream) {
  cudaError_t status = cudaSuccess;
  with_inner(inner, [&](auto tiles) {
    constexpr int kInner = decltype(tiles)::value;
    status = m > 8 ? launch_decode_rows<kInner, 2>(device, multiprocessors, m, a, packed, sz, c, n, k, group_shift,
                                                   stream)
                   : launch_decode_rows<kInner, 1>(device, multiprocessors, m, a, packed, sz, c, n, k, group_shift,
                                                   stream);
  });
  return status;
}

}  // namespace int4pack
}  // namespace aotirt
