#include <cuda_runtime.h>

#include "kernels.h"
#include "reduce.cuh"

namespace kernels {
namespace cuda {
namespace {

constexpr int kThreads = 1024;                     // a multiple of 32, as the block reductions need
constexpr int kValueSlices = 4;                    // thread groups splitting the keys of the weighted sum
constexpr int kGroup = kThreads / kValueSlices;    // output elements per pass of the weighted sum

// One block does the whole query: a single query is too little work to
// spread over blocks, and one block keeps the softmax's max and sum in
// shared memory without a second launch. The block is as large as a block
// gets, so that each thread's chain of dependent loads stays short: a
// decoder step waits on this kernel. __launch_bounds__ tells ptxas the block
// size, so it keeps to the 64 registers a thread may have in a 1024-thread
// block: without it, a change that needed more would build and then fail
// every launch with cudaErrorLaunchOutOfResources.
__global__ void __launch_bounds__(kThreads)
    attention_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                     const float* __restrict__ residual, float* __restrict__ out, int64_t t, int64_t t_padded,
                     int64_t dim, float scale) {
  extern __shared__ float shared[];
  float* p = shared;                  // t scores, turned into unnormalised probabilities in place
  float* partial = shared + t_padded; // kThreads partial sums of the weighted sum
  __shared__ float scratch[32];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;

  // Scores: one warp per key, its lanes splitting the dot product.
  for (int64_t i = warp; i < t; i += warps) {
    float s = 0.0f;
#pragma unroll 8
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

  // Weighted sum of the values, kGroup output elements per pass: group g of
  // the threads sums keys g, g + kValueSlices, ...; the threads of a warp
  // read consecutive elements of a row of v. The groups' sums are then added
  // in group order.
  const int group = threadIdx.x / kGroup;
  const int member = threadIdx.x % kGroup;
  for (int64_t d0 = 0; d0 < dim; d0 += kGroup) {
    const int64_t d = d0 + member;
    float acc = 0.0f;
    if (d < dim) {
      // Unrolled wide, so that a thread's loads of v (16 at the decoder's
      // t = 64) are in flight together rather than one after another.
#pragma unroll 16
      for (int64_t i = group; i < t; i += kValueSlices) acc = fmaf(p[i], v[i * dim + d], acc);
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    if (group == 0 && d < dim) {
      float total = 0.0f;
#pragma unroll
      for (int g = 0; g < kValueSlices; ++g) total += partial[g * kGroup + member];
      const float context = total * inv;
      out[d] = residual ? residual[d] + context : context;
    }
    __syncthreads();  // partial[] is rewritten next pass
  }
}

}  // namespace

int attention(const float* q, const float* k, const float* v, const float* residual, float* out, int64_t t,
              int64_t dim, void* stream) {
  if (dim == 0) return cudaSuccess;
  if (t < 0 || t > kMaxAttentionLength) return cudaErrorInvalidValue;
  const float scale = 1.0f / sqrtf(static_cast<float>(dim));
  // The scores are rounded up to whole 16-byte vectors, plus one: the
  // compiler may read p[] in vectors of up to four floats (compute-sanitizer
  // saw a 12-byte read past a 4-byte array at t = 1), which must stay inside
  // the allocation.
  const int64_t t_padded = (t + 3) / 4 * 4 + 4;
  const size_t shared = static_cast<size_t>(t_padded + kThreads) * sizeof(float);
  attention_kernel<<<1, kThreads, shared, static_cast<cudaStream_t>(stream)>>>(q, k, v, residual, out, t,
                                                                                t_padded, dim, scale);
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace kernels
