#include <cuda_runtime.h>

#include "kernels.h"
#include "reduce.cuh"

namespace kernels {
namespace cuda {
namespace {

constexpr int kThreads = 256;  // a multiple of 32, as the block reductions need

// One block does the whole query: a single query is too little work to
// spread, and one block keeps the softmax's max and sum in shared memory
// without a second launch.
__global__ void attention_kernel(const float* __restrict__ q, const float* __restrict__ k,
                                 const float* __restrict__ v, float* __restrict__ out, int64_t t, int64_t dim,
                                 float scale) {
  extern __shared__ float p[];  // t scores, turned into unnormalised probabilities in place
  __shared__ float scratch[32];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;

  // Scores: one warp per key, its lanes splitting the dot product.
  for (int64_t i = warp; i < t; i += warps) {
    float s = 0.0f;
    for (int64_t d = lane; d < dim; d += 32) s = fmaf(q[d], k[i * dim + d], s);
    s = detail::warp_sum(s);
    if (lane == 0) p[i] = s * scale;
  }
  __syncthreads();

  // Softmax, max-subtracted so exp() cannot overflow.
  float top = -INFINITY;
  for (int64_t i = threadIdx.x; i < t; i += blockDim.x) top = fmaxf(top, p[i]);
  top = detail::block_max(top, scratch);
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < t; i += blockDim.x) {
    const float e = expf(p[i] - top);
    p[i] = e;
    sum += e;
  }
  sum = detail::block_sum(sum, scratch);  // its __syncthreads also publishes p[]
  const float inv = t > 0 ? 1.0f / sum : 0.0f;

  // Weighted sum of the values: one output element per thread; the threads
  // of a warp read consecutive elements of a row of v.
  for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) {
    float acc = 0.0f;
    for (int64_t i = 0; i < t; ++i) acc = fmaf(p[i], v[i * dim + d], acc);
    out[d] = acc * inv;
  }
}

}  // namespace

int attention(const float* q, const float* k, const float* v, float* out, int64_t t, int64_t dim, void* stream) {
  if (dim == 0) return cudaSuccess;
  if (t < 0 || t > kMaxAttentionLength) return cudaErrorInvalidValue;
  const float scale = 1.0f / sqrtf(static_cast<float>(dim));
  // Rounded up to whole 16-byte vectors: the compiler may read p[] in
  // vectors of up to four floats (compute-sanitizer saw a 12-byte read past
  // a 4-byte array at t = 1), which must stay inside the allocation.
  const size_t shared = static_cast<size_t>((t + 3) / 4 * 4 + 4) * sizeof(float);
  attention_kernel<<<1, kThreads, shared, static_cast<cudaStream_t>(stream)>>>(q, k, v, out, t, dim, scale);
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace kernels
