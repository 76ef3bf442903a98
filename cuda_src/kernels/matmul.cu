// c = a @ b (+ bias) (then GELU), two ways by the height of a:
//
// - Skinny (m <= kSkinnyMaxRows: the decoder's one-row products and its
//   64-row key/value projections). Tiles of 16 x 16 would give such a
//   product few blocks and a long chain of dependent loads (k / 16 rounds,
//   each a trip to L2 and two barriers), and a decoder step is a chain of
//   them. Instead each warp takes 32 columns and a share of k; the shares are
//   summed once in shared memory at the end. (Nsight Compute on the H200:
//   the decoder's four one-row products took 2.8-4.1 us each this way with a
//   read from global memory per row and k; the 64-row ones 7.9 us.)
// - Tiled (taller a): 16 x 16 tiles of c staged through shared memory.
#include <cuda_runtime.h>

#include "gelu.h"
#include "kernels.h"

namespace kernels {
namespace cuda {
namespace {

constexpr int kTile = 16;
constexpr int kSkinnyCols = 32;     // a warp's lanes: consecutive columns, so rows of b load in whole lines
constexpr int kSkinnyRows = 8;      // rows of c per block when m > 1
constexpr int kSkinnyChunk = 512;   // k staged in shared memory per round: 16 KiB of a for 8 rows
constexpr int64_t kSkinnyMaxRows = 64;

// Warps per block, each summing every kSlices-th k. One row needs little
// shared memory, so it takes twice the warps and half the chain of loads.
template <int kRows>
__host__ __device__ constexpr int skinny_slices() { return kRows == 1 ? 32 : 16; }

enum class Epilogue { kNone, kGelu };

template <Epilogue kEpilogue>
__device__ __forceinline__ float finish(float acc, const float* bias, int64_t col) {
  const float v = bias ? acc + bias[col] : acc;
  return kEpilogue == Epilogue::kGelu ? gelu_tanh(v) : v;
}

// Block (kSkinnyCols, kSlices); grid (column groups, row groups of kRows).
// The block's rows of a are staged in shared memory a chunk of k at a time
// (one coalesced load, then broadcast reads), so the only global loads in
// the inner loop are b's, and they are independent: unrolled, they are in
// flight together. Thread (lane, slice) sums a[r, l] * b[l, col] over
// l = slice, slice + kSlices, ...; every l is summed by exactly one slice,
// and the slices' sums are added in slice order.
template <int kRows, Epilogue kEpilogue>
__global__ void skinny_matmul_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                     const float* __restrict__ bias, float* __restrict__ c, int64_t m, int64_t n,
                                     int64_t k) {
  constexpr int kSlices = skinny_slices<kRows>();
  __shared__ float a_chunk[kRows][kSkinnyChunk];
  __shared__ float partial[kSlices][kRows][kSkinnyCols];
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
    for (int i = flat; i < kRows * kSkinnyChunk; i += kSlices * kSkinnyCols) {
      const int r = i / kSkinnyChunk, l = i % kSkinnyChunk;
      a_chunk[r][l] = (r < rows && l < width) ? a[(row0 + r) * k + k0 + l] : 0.0f;
    }
    __syncthreads();
    if (col < n) {
#pragma unroll 16
      for (int l = slice; l < width; l += kSlices) {
        const float b_lc = b[(k0 + l) * n + col];
#pragma unroll
        for (int r = 0; r < kRows; ++r) acc[r] = fmaf(a_chunk[r][l], b_lc, acc[r]);
      }
    }
    __syncthreads();  // a_chunk is overwritten next round
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
      for (int s = 0; s < kSlices; ++s) sum += partial[s][r][lane_r];
      c[(row0 + r) * n + col_r] = finish<kEpilogue>(sum, bias, col_r);
    }
  }
}

// One kTile x kTile block of c per thread block, one element per thread.
// Tiles of a and b are staged in shared memory; elements outside the
// matrices load as zero, so sizes need not be multiples of the tile (the
// zero products add exactly nothing), and only in-range elements are stored.
template <Epilogue kEpilogue>
__global__ void tiled_matmul_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                    const float* __restrict__ bias, float* __restrict__ c, int64_t m, int64_t n,
                                    int64_t k) {
  __shared__ float a_tile[kTile][kTile];
  __shared__ float b_tile[kTile][kTile];
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
int launch_matmul(const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t n, int64_t k,
                  void* stream) {
  if (m == 0 || n == 0) return cudaSuccess;
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (m <= kSkinnyMaxRows) {
    const int64_t col_groups = (n + kSkinnyCols - 1) / kSkinnyCols;
    if (col_groups > 0x7fffffff) return cudaErrorInvalidValue;  // grid limit
    if (m == 1) {
      skinny_matmul_kernel<1, kEpilogue><<<dim3(static_cast<unsigned>(col_groups), 1),
                                           dim3(kSkinnyCols, skinny_slices<1>()), 0, s>>>(a, b, bias, c, m, n, k);
    } else {
      const unsigned row_groups = static_cast<unsigned>((m + kSkinnyRows - 1) / kSkinnyRows);
      skinny_matmul_kernel<kSkinnyRows, kEpilogue><<<dim3(static_cast<unsigned>(col_groups), row_groups),
                                                     dim3(kSkinnyCols, skinny_slices<kSkinnyRows>()), 0, s>>>(
          a, b, bias, c, m, n, k);
    }
    return cudaGetLastError();
  }
  const int64_t row_tiles = (m + kTile - 1) / kTile;
  const int64_t col_tiles = (n + kTile - 1) / kTile;
  if (row_tiles > 65535 || col_tiles > 0x7fffffff) return cudaErrorInvalidValue;  // grid limits
  const dim3 grid(static_cast<unsigned>(col_tiles), static_cast<unsigned>(row_tiles));
  tiled_matmul_kernel<kEpilogue><<<grid, dim3(kTile, kTile), 0, s>>>(a, b, bias, c, m, n, k);
  return cudaGetLastError();
}

}  // namespace

int matmul(const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t n, int64_t k,
           void* stream) {
  return launch_matmul<Epilogue::kNone>(a, b, bias, c, m, n, k, stream);
}

int matmul_gelu(const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t n, int64_t k,
                void* stream) {
  return launch_matmul<Epilogue::kGelu>(a, b, bias, c, m, n, k, stream);
}

}  // namespace cuda
}  // namespace kernels
