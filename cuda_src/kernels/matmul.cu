// c = a @ b (+ bias) (then GELU), two ways by the height of a:
//
// - Skinny (m <= kSkinnyMaxRows: the decoder's one-row products and its
//   64-row key/value projections). Tiles of 16 x 16 would give such a
//   product few blocks and a long chain of dependent loads (k / 16 rounds,
//   each a trip to L2 and two barriers), and a decoder step is a chain of
//   them. Instead each warp takes 32 columns and a share of k; the shares are
//   summed once in shared memory at the end.
// - Tiled (taller a): 16 x 16 tiles of c staged through shared memory.
#include <cuda_runtime.h>

#include "gelu.h"
#include "kernels.h"

namespace kernels {
namespace cuda {
namespace {

constexpr int kTile = 16;
constexpr int kSkinnyCols = 32;     // a warp's lanes: consecutive columns, so rows of b load in whole lines
constexpr int kSkinnySlices = 16;   // warps per block, each summing every 16th k
constexpr int kSkinnyRows = 8;      // rows of c per block when m > 1
constexpr int kSkinnyChunk = 512;   // k staged in shared memory per round: 16 KiB of a for 8 rows
constexpr int64_t kSkinnyMaxRows = 64;

enum class Epilogue { kNone, kGelu };

// One or two products of the same a, c[z] = a @ b[z], chosen by blockIdx.z:
// the decoder's keys and values are two projections of its hidden input,
// and one launch for both halves what it pays in launches.
struct Products {
  const float* b[2];
  float* c[2];
};

template <Epilogue kEpilogue>
__device__ __forceinline__ float finish(float acc, const float* bias, int64_t col) {
  const float v = bias ? acc + bias[col] : acc;
  return kEpilogue == Epilogue::kGelu ? gelu_tanh(v) : v;
}

// Block (kSkinnyCols, kSkinnySlices); grid (column groups, row groups of
// kRows, products). Thread (lane, slice) sums a[r, l] * b[l, col] over
// l = slice, slice + 16, ...; every l is summed by exactly one slice, and
// the slices' sums are added in slice order. The inner loop's loads of b are
// independent of each other: unrolled, they are in flight together. A single
// row of a is read directly (every lane reads the same word: one broadcast
// load); several rows are staged in shared memory a chunk of k at a time
// (one coalesced load, then broadcast reads), as reading each of them per l
// from global memory took 7.9 us for the decoder's 64-row projections
// against 4.6 us staged (Nsight Compute on the H200).
template <int kRows, Epilogue kEpilogue>
__global__ void skinny_matmul_kernel(const float* __restrict__ a, Products products,
                                     const float* __restrict__ bias, int64_t m, int64_t n, int64_t k) {
  constexpr bool kStageA = kRows > 1;
  __shared__ float a_chunk[kStageA ? kRows : 1][kStageA ? kSkinnyChunk : 1];
  __shared__ float partial[kSkinnySlices][kRows][kSkinnyCols];
  // Selected, not indexed: indexing the parameter by blockIdx.z would copy
  // it to local memory.
  const float* __restrict__ b = blockIdx.z == 0 ? products.b[0] : products.b[1];
  float* __restrict__ c = blockIdx.z == 0 ? products.c[0] : products.c[1];
  const int lane = threadIdx.x;
  const int slice = threadIdx.y;
  const int flat = slice * kSkinnyCols + lane;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kSkinnyCols + lane;
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kRows;
  const int rows = static_cast<int>(m - row0 < kRows ? m - row0 : kRows);

  float acc[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[r] = 0.0f;
  for (int64_t k0 = 0; k0 < k; k0 += kSkinnyChunk) {
    const int width = static_cast<int>(k - k0 < kSkinnyChunk ? k - k0 : kSkinnyChunk);
    if constexpr (kStageA) {
      for (int i = flat; i < kRows * kSkinnyChunk; i += kSkinnySlices * kSkinnyCols) {
        const int r = i / kSkinnyChunk, l = i % kSkinnyChunk;
        a_chunk[r][l] = (r < rows && l < width) ? a[(row0 + r) * k + k0 + l] : 0.0f;
      }
      __syncthreads();
    }
    if (col < n) {
#pragma unroll 16
      for (int l = slice; l < width; l += kSkinnySlices) {
        const float b_lc = b[(k0 + l) * n + col];
        if constexpr (kStageA) {
#pragma unroll
          for (int r = 0; r < kRows; ++r) acc[r] = fmaf(a_chunk[r][l], b_lc, acc[r]);
        } else {
          acc[0] = fmaf(a[row0 * k + k0 + l], b_lc, acc[0]);
        }
      }
    }
    if constexpr (kStageA) __syncthreads();  // a_chunk is overwritten next round
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) partial[slice][r][lane] = acc[r];
  __syncthreads();

  // The first kRows * 32 threads each finish one element of the block's tile.
  if (flat < kRows * kSkinnyCols) {
    const int r = flat / kSkinnyCols;
    const int lane_r = flat % kSkinnyCols;
    const int64_t col_r = static_cast<int64_t>(blockIdx.x) * kSkinnyCols + lane_r;
    if (r < rows && col_r < n) {
      float sum = 0.0f;
#pragma unroll
      for (int s = 0; s < kSkinnySlices; ++s) sum += partial[s][r][lane_r];
      c[(row0 + r) * n + col_r] = finish<kEpilogue>(sum, bias, col_r);
    }
  }
}

// One kTile x kTile block of c per thread block, one element per thread.
// Tiles of a and b are staged in shared memory; elements outside the
// matrices load as zero, so sizes need not be multiples of the tile (the
// zero products add exactly nothing), and only in-range elements are stored.
template <Epilogue kEpilogue>
__global__ void tiled_matmul_kernel(const float* __restrict__ a, Products products,
                                    const float* __restrict__ bias, int64_t m, int64_t n, int64_t k) {
  __shared__ float a_tile[kTile][kTile];
  __shared__ float b_tile[kTile][kTile];
  const float* __restrict__ b = blockIdx.z == 0 ? products.b[0] : products.b[1];
  float* __restrict__ c = blockIdx.z == 0 ? products.c[0] : products.c[1];
  const int tx = threadIdx.x;  // column within the tile
  const int ty = threadIdx.y;  // row within the tile
  const int64_t row = static_cast<int64_t>(blockIdx.y) * kTile + ty;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kTile + tx;
  float acc = 0.0f;
  for (int64_t k0 = 0; k0 < k; k0 += kTile) {
    const int64_t ka = k0 + tx;  // a_tile[ty][tx] = a[row, k0 + tx]
    const int64_t kb = k0 + ty;  // b_tile[ty][tx] = b[k0 + ty, col]
    a_tile[ty][tx] = (row < m && ka < k) ? a[row * k + ka] : 0.0f;
    b_tile[ty][tx] = (kb < k && col < n) ? b[kb * n + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int p = 0; p < kTile; ++p) acc = fmaf(a_tile[ty][p], b_tile[p][tx], acc);
    __syncthreads();  // the tiles are overwritten next round
  }
  if (row < m && col < n) c[row * n + col] = finish<kEpilogue>(acc, bias, col);
}

template <Epilogue kEpilogue>
int launch_matmul(const float* a, const Products& products, unsigned count, const float* bias, int64_t m,
                  int64_t n, int64_t k, void* stream) {
  if (m == 0 || n == 0) return cudaSuccess;
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  const dim3 skinny_block(kSkinnyCols, kSkinnySlices);
  if (m <= kSkinnyMaxRows) {
    const int64_t col_groups = (n + kSkinnyCols - 1) / kSkinnyCols;
    if (col_groups > 0x7fffffff) return cudaErrorInvalidValue;  // grid limit
    if (m == 1) {
      skinny_matmul_kernel<1, kEpilogue><<<dim3(static_cast<unsigned>(col_groups), 1, count), skinny_block, 0,
                                           s>>>(a, products, bias, m, n, k);
    } else {
      const unsigned row_groups = static_cast<unsigned>((m + kSkinnyRows - 1) / kSkinnyRows);
      skinny_matmul_kernel<kSkinnyRows, kEpilogue><<<dim3(static_cast<unsigned>(col_groups), row_groups, count),
                                                     skinny_block, 0, s>>>(a, products, bias, m, n, k);
    }
    return cudaGetLastError();
  }
  const int64_t row_tiles = (m + kTile - 1) / kTile;
  const int64_t col_tiles = (n + kTile - 1) / kTile;
  if (row_tiles > 65535 || col_tiles > 0x7fffffff) return cudaErrorInvalidValue;  // grid limits
  const dim3 grid(static_cast<unsigned>(col_tiles), static_cast<unsigned>(row_tiles), count);
  tiled_matmul_kernel<kEpilogue><<<grid, dim3(kTile, kTile), 0, s>>>(a, products, bias, m, n, k);
  return cudaGetLastError();
}

}  // namespace

int matmul(const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t n, int64_t k,
           void* stream) {
  return launch_matmul<Epilogue::kNone>(a, Products{{b, b}, {c, c}}, 1, bias, m, n, k, stream);
}

int matmul_gelu(const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t n, int64_t k,
                void* stream) {
  return launch_matmul<Epilogue::kGelu>(a, Products{{b, b}, {c, c}}, 1, bias, m, n, k, stream);
}

int matmul_pair(const float* a, const float* b0, const float* b1, float* c0, float* c1, int64_t m, int64_t n,
                int64_t k, void* stream) {
  return launch_matmul<Epilogue::kNone>(a, Products{{b0, b1}, {c0, c1}}, 2, nullptr, m, n, k, stream);
}

}  // namespace cuda
}  // namespace kernels
