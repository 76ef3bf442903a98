// Scaled dot-product attention on the GPU: a straightforward kernel, correct
// for any lengths, strides and head sizes, not a tuned one.
//
// One block per query row (batch, head, row), grid-stride over the rows. The
// block walks the keys in tiles with an online softmax (running max and sum,
// the accumulator rescaled when the max grows), so no scratch memory outside
// shared memory is needed whatever kv_len is: shared memory holds the query
// row, the output accumulator and one tile of scores, all in float.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "runtime/dtypes.h"
#include "runtime/errors.h"
#include "runtime/tensor.h"
#include "shims/attention/sdpa.h"
#include "shims/attention/sdpa_device.cuh"

namespace aotirt {
namespace attention {
namespace {

constexpr int kThreads = 128;       // 4 warps
constexpr int kTile = kThreads;     // keys per tile: one exponential per thread
constexpr int kMaxGrid = 1 << 20;   // the grid-stride loop covers more rows
constexpr size_t kMaxShared = 48 * 1024;  // dynamic shared memory without opting in

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

template <typename T>
__global__ void __launch_bounds__(kThreads) attention_kernel(Problem p) {
  extern __shared__ float shared[];
  float* q_row = shared;                 // head_dim
  float* acc = q_row + p.head_dim;       // value_dim: unnormalised output
  float* tile = acc + p.value_dim;       // kTile scores, then their exponentials
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  const float scale = static_cast<float>(p.scale);
  const int64_t group = p.kv_heads > 0 ? p.heads / p.kv_heads : 1;
  const int64_t rows = p.batch * p.heads * p.q_len;

  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t i = row % p.q_len;
    const int64_t h = (row / p.q_len) % p.heads;
    const int64_t b = row / (p.q_len * p.heads);
    const int64_t hk = h / group;
    const T* q = static_cast<const T*>(p.q) + b * p.q_stride[0] + h * p.q_stride[1] + i * p.q_stride[2];
    const T* k = static_cast<const T*>(p.k) + b * p.k_stride[0] + hk * p.k_stride[1];
    const T* v = static_cast<const T*>(p.v) + b * p.v_stride[0] + hk * p.v_stride[1];
    const int64_t bias_row = b * p.bias_stride[0] + h * p.bias_stride[1] + i * p.bias_stride[2];

    for (int64_t e = threadIdx.x; e < p.head_dim; e += blockDim.x) q_row[e] = to_float(q[e * p.q_stride[3]]);
    for (int64_t d = threadIdx.x; d < p.value_dim; d += blockDim.x) acc[d] = 0.0f;
    int64_t keys = p.kv_len;
    if (p.causal != kNotCausal) {
      const int64_t offset = p.causal == kBottomRight ? p.kv_len - p.q_len : 0;
      const int64_t last = i + offset;  // the last key this row sees
      keys = last < 0 ? 0 : (last + 1 < p.kv_len ? last + 1 : p.kv_len);
    }
    // Every thread keeps the same running max and sum: each reads the whole
    // tile from shared memory, which costs less than broadcasting them.
    float top = -INFINITY;
    float sum = 0.0f;
    __syncthreads();  // q_row and acc are written

    for (int64_t start = 0; start < keys; start += kTile) {
      const int n = static_cast<int>(keys - start < kTile ? keys - start : kTile);
      // Scores: one warp per key, its lanes splitting the dot product.
      for (int j = warp; j < n; j += warps) {
        const T* kj = k + (start + j) * p.k_stride[2];
        float s = 0.0f;
        for (int64_t e = lane; e < p.head_dim; e += 32) s = fmaf(q_row[e], to_float(kj[e * p.k_stride[3]]), s);
        s = warp_sum(s) * scale;
        if (lane == 0)
          tile[j] = p.bias ? bias_at(p.bias, p.bias_dtype, bias_row + (start + j) * p.bias_stride[3], s) : s;
      }
      __syncthreads();
      float tile_top = -INFINITY;
      for (int j = 0; j < n; ++j) tile_top = fmaxf(tile_top, tile[j]);
      const float new_top = fmaxf(top, tile_top);
      __syncthreads();  // every thread has read the scores before they are replaced
      if (new_top == -INFINITY) continue;  // the whole tile is masked out (same for all threads)
      if (threadIdx.x < n) tile[threadIdx.x] = expf(tile[threadIdx.x] - new_top);
      __syncthreads();
      const float rescale = expf(top - new_top);  // 0 for the first unmasked tile
      float tile_sum = 0.0f;
      for (int j = 0; j < n; ++j) tile_sum += tile[j];
      sum = sum * rescale + tile_sum;
      top = new_top;
      // The weighted values: one output element per thread; the threads of a
      // warp read consecutive elements of a value row.
      for (int64_t d = threadIdx.x; d < p.value_dim; d += blockDim.x) {
        const T* vd = v + start * p.v_stride[2] + d * p.v_stride[3];
        float a = acc[d] * rescale;
        for (int j = 0; j < n; ++j) a = fmaf(tile[j], to_float(vd[j * p.v_stride[2]]), a);
        acc[d] = a;
      }
      __syncthreads();  // the tile is read before the next one is written
    }

    // A row with every key masked out has sum 0: zeros and a log-sum-exp of 0.
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    T* out = static_cast<T*>(p.out) + b * p.out_stride[0] + h * p.out_stride[1] + i * p.out_stride[2];
    for (int64_t d = threadIdx.x; d < p.value_dim; d += blockDim.x) out[d * p.out_stride[3]] = from_float<T>(acc[d] * inv);
    if (p.lse) {
      float* lse = static_cast<float*>(p.lse) + b * p.lse_stride[0] + h * p.lse_stride[1];
      if (threadIdx.x == 0) lse[i * p.lse_stride[2]] = sum > 0.0f ? top + logf(sum) : 0.0f;
      if (i == p.q_len - 1)
        for (int64_t r = threadIdx.x; r < p.lse_padding; r += blockDim.x)
          lse[(p.q_len + r) * p.lse_stride[2]] = INFINITY;
    }
    __syncthreads();  // q_row and acc are read before the next row overwrites them
  }
}

template <typename T>
cudaError_t launch(const Problem& p, unsigned grid, size_t shared, cudaStream_t stream) {
  attention_kernel<T><<<grid, kThreads, shared, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace

aotirt_status run_cuda(const Problem& p, Stream* stream) {
  const int64_t rows = p.batch * p.heads * p.q_len;
  if (rows == 0) return AOTIRT_OK;
  const size_t shared = static_cast<size_t>(p.head_dim + p.value_dim + kTile) * sizeof(float);
  if (shared > kMaxShared)
    return fail(AOTIRT_ERROR_VALUE, "attention: head sizes " + std::to_string(p.head_dim) + " (query/key) and " +
                                        std::to_string(p.value_dim) + " (value) do not fit this kernel's shared "
                                        "memory; their sum can be at most " +
                                        std::to_string(kMaxShared / sizeof(float) - kTile));
  if (p.lse && p.lse_dtype != AOTIRT_DTYPE_FLOAT32) return fail(AOTIRT_ERROR_TYPE, "attention on CUDA writes a float32 log-sum-exp");
  const unsigned grid = static_cast<unsigned>(rows < kMaxGrid ? rows : kMaxGrid);
  cudaError_t launched;
  switch (p.dtype) {
    case AOTIRT_DTYPE_FLOAT32: launched = launch<float>(p, grid, shared, stream->handle); break;
    case AOTIRT_DTYPE_FLOAT16: launched = launch<__half>(p, grid, shared, stream->handle); break;
    case AOTIRT_DTYPE_BFLOAT16: launched = launch<__nv_bfloat16>(p, grid, shared, stream->handle); break;
    default:
      return fail(AOTIRT_ERROR_TYPE, std::string("attention on CUDA takes float32, float16 or bfloat16, not ") +
                                         dtype_name(p.dtype));
  }
  if (launched != cudaSuccess) return fail_cuda(launched, "launching the attention kernel");
  return AOTIRT_OK;
}

}  // namespace attention
}  // namespace aotirt
