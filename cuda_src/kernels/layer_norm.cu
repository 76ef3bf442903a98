#include <cuda_runtime.h>

#include "kernels.h"
#include "reduce.cuh"

namespace kernels {
namespace cuda {
namespace {

constexpr int kThreads = 256;  // a multiple of 32, as the block reductions need

// One block per row. Two passes over the row (mean, then squared
// deviations), as the CPU version: one pass of sum and sum of squares loses
// the variance to cancellation when the mean is large.
__global__ void layer_norm_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                                  const float* __restrict__ beta, float* __restrict__ out, int64_t cols,
                                  float eps) {
  __shared__ float scratch[32];
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * cols;
  float* yr = out + static_cast<int64_t>(blockIdx.x) * cols;
  float sum = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += xr[c];
  const float mean = detail::block_sum(sum, scratch) / static_cast<float>(cols);  // cols > 0: see the launch
  float squares = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float dev = xr[c] - mean;
    squares = fmaf(dev, dev, squares);
  }
  const float var = detail::block_sum(squares, scratch) / static_cast<float>(cols);
  const float inv_std = 1.0f / sqrtf(var + eps);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = (xr[c] - mean) * inv_std * gamma[c] + beta[c];
}

}  // namespace

int layer_norm(const float* x, const float* gamma, const float* beta, float* out, int64_t rows, int64_t cols,
               float eps, void* stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  if (rows > 0x7fffffff) return cudaErrorInvalidValue;  // one block per row
  layer_norm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      x, gamma, beta, out, cols, eps);
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace kernels
