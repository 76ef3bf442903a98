// The kernels that handle tokens: argmax picks one, embedding looks one up.
// Neither brings a token to the host: the decoder's next_token output feeds
// its next step's embedding on the device.
#include <cuda_runtime.h>

#include "kernels.h"
#include "reduce.cuh"

namespace kernels {
namespace cuda {
namespace {

constexpr int kArgmaxThreads = 256;  // a power of two: the tree below halves it
constexpr int kEmbeddingThreads = 256;

// Whether (a, ia) beats (b, ib): the larger value, NaN above everything, and
// on equal values (or two NaNs) the lower index, as numpy's argmax. ib < 0
// means "no candidate yet".
__device__ __forceinline__ bool beats(float a, int64_t ia, float b, int64_t ib) {
  if (ia < 0) return false;
  if (ib < 0) return true;
  const bool a_nan = isnan(a), b_nan = isnan(b);
  if (a_nan != b_nan) return a_nan;
  if (!a_nan && a != b) return a > b;
  return ia < ib;
}

// One block: each thread scans a strided share of x, then a tree in shared
// memory keeps the winner. Enough for the decoder's vocabulary (thousands).
__global__ void argmax_kernel(const float* __restrict__ x, int64_t n, int64_t* __restrict__ out) {
  __shared__ float value[kArgmaxThreads];
  __shared__ int64_t index[kArgmaxThreads];
  float best = 0.0f;
  int64_t best_index = -1;
  for (int64_t i = threadIdx.x; i < n; i += kArgmaxThreads) {
    const float xi = x[i];
    if (beats(xi, i, best, best_index)) {
      best = xi;
      best_index = i;
    }
  }
  value[threadIdx.x] = best;
  index[threadIdx.x] = best_index;
  __syncthreads();
  for (int half = kArgmaxThreads / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) {
      const int other = threadIdx.x + half;
      if (beats(value[other], index[other], value[threadIdx.x], index[threadIdx.x])) {
        value[threadIdx.x] = value[other];
        index[threadIdx.x] = index[other];
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = index[0];
}

__global__ void embedding_kernel(const float* __restrict__ table, const int64_t* __restrict__ token,
                                 float* __restrict__ out, int64_t vocab, int64_t dim) {
  const int64_t row = *token;  // every thread reads the same word: one broadcast load
  const bool valid = row >= 0 && row < vocab;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t d = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; d < dim; d += step)
    out[d] = valid ? table[row * dim + d] : __int_as_float(0x7fc00000);  // quiet NaN
}

}  // namespace

int argmax(const float* x, int64_t n, int64_t* out, void* stream) {
  argmax_kernel<<<1, kArgmaxThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, n, out);
  return cudaGetLastError();
}

int embedding(const float* table, const int64_t* token, float* out, int64_t vocab, int64_t dim, void* stream) {
  if (dim == 0) return cudaSuccess;
  embedding_kernel<<<detail::grid_for(dim, kEmbeddingThreads), kEmbeddingThreads, 0,
                     static_cast<cudaStream_t>(stream)>>>(table, token, out, vocab, dim);
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace kernels
