#include <cuda_runtime.h>

#include "kernels.h"

namespace kernels {
namespace cuda {
namespace {

constexpr int kTile = 16;

// One kTile x kTile block of c per thread block, one element per thread.
// Tiles of a and b are staged in shared memory; elements outside the
// matrices load as zero, so sizes need not be multiples of the tile (the
// zero products add exactly nothing), and only in-range elements are stored.
__global__ void matmul_kernel(const float* __restrict__ a, const float* __restrict__ b,
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
  if (row < m && col < n) c[row * n + col] = bias ? acc + bias[col] : acc;
}

}  // namespace

int matmul(const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t n, int64_t k,
           void* stream) {
  if (m == 0 || n == 0) return cudaSuccess;
  const int64_t row_tiles = (m + kTile - 1) / kTile;
  const int64_t col_tiles = (n + kTile - 1) / kTile;
  if (row_tiles > 65535 || col_tiles > 0x7fffffff) return cudaErrorInvalidValue;  // grid limits
  dim3 grid(static_cast<unsigned>(col_tiles), static_cast<unsigned>(row_tiles));
  dim3 block(kTile, kTile);
  matmul_kernel<<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(a, b, bias, c, m, n, k);
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace kernels
