// The kernels that handle tokens: argmax picks one, embedding looks one up.
// Neither brings a token to the host: the decoder's next_token output feeds
// its next step's embedding on the device.
#include <cuda_runtime.h>

#include "kernels.h"
#include "reduce.cuh"

namespace kernels {
namespace cuda {
namespace {

constexpr int kArgmaxThreads = 256;  // a multiple of 32, at most 32 warps (one warp reduces the warps)
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

// Keeps the winner of (value, index) and the candidate from `lane_offset`
// lanes away: beats() is a strict total order, so any reduction order picks
// the same winner.
__device__ __forceinline__ void keep_best_of_shuffle(float& value, int64_t& index, int lane_offset) {
  const float other_value = __shfl_xor_sync(0xffffffffu, value, lane_offset);
  const int64_t other_index = __shfl_xor_sync(0xffffffffu, index, lane_offset);
  if (beats(other_value, other_index, value, index)) {
    value = other_value;
    index = other_index;
  }
}

// One block: each thread scans a strided share of x, each warp reduces its
// candidates with shuffles, and the first warp reduces the warps' winners.
// Enough for the decoder's vocabulary (thousands).
__global__ void argmax_kernel(const float* __restrict__ x, int64_t n, int64_t* __restrict__ out) {
  __shared__ float warp_value[kArgmaxThreads / 32];
  __shared__ int64_t warp_index[kArgmaxThreads / 32];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  float best = 0.0f;
  int64_t best_index = -1;
  for (int64_t i = threadIdx.x; i < n; i += kArgmaxThreads) {
    const float xi = x[i];
    if (beats(xi, i, best, best_index)) {
      best = xi;
      best_index = i;
    }
  }
  for (int offset = 16; offset > 0; offset >>= 1) keep_best_of_shuffle(best, best_index, offset);
  if (lane == 0) {
    warp_value[warp] = best;
    warp_index[warp] = best_index;
  }
  __syncthreads();
  if (warp == 0) {
    best = lane < kArgmaxThreads / 32 ? warp_value[lane] : 0.0f;
    best_index = lane < kArgmaxThreads / 32 ? warp_index[lane] : -1;
    for (int offset = 16; offset > 0; offset >>= 1) keep_best_of_shuffle(best, best_index, offset);
    if (lane == 0) out[0] = best_index;
  }
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
