#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <string>

#include "runtime/errors.h"
#include "shims/convolution/conv_bias.h"

namespace aotirt {
namespace conv_cuda {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 1u << 16;  // a grid-stride loop covers the rest

struct View {
  int64_t ndim = 0;
  int64_t sizes[5] = {};
  int64_t strides[5] = {};
  int64_t numel = 0;
  int64_t bias_stride = 0;
};

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

template <typename T>
__global__ void add_bias(T* out, const T* bias, View v) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < v.numel; i += step) {
    int64_t rest = i, offset = 0, channel = 0;
    for (int64_t d = v.ndim - 1; d >= 0; --d) {
      const int64_t index = rest % v.sizes[d];
      rest /= v.sizes[d];
      offset += index * v.strides[d];
      if (d == 1) channel = index;
    }
    store(out + offset, to_float(out[offset]) + to_float(bias[channel * v.bias_stride]));
  }
}

template <typename T>
cudaError_t launch(const Tensor& out, const Tensor& bias, const View& v, cudaStream_t stream) {
  const int64_t blocks = (v.numel + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
  add_bias<T><<<grid, kThreads, 0, stream>>>(static_cast<T*>(out.data()), static_cast<const T*>(bias.data()), v);
  return cudaGetLastError();
}

}  // namespace

aotirt_status add_channel_bias(const Tensor& out, const Tensor& bias, Stream* stream) {
  View v;
  v.ndim = out.ndim;
  v.numel = out.numel();
  if (v.numel == 0) return AOTIRT_OK;
  if (out.ndim < 2 || out.ndim > 5 || bias.ndim != 1 || bias.sizes[0] != out.sizes[1])
    return fail(AOTIRT_ERROR_VALUE, "convolution bias: " + std::to_string(bias.numel()) + " values for " +
                                        std::to_string(out.ndim > 1 ? out.sizes[1] : 0) + " channels");
  for (int64_t d = 0; d < out.ndim; ++d) {
    v.sizes[d] = out.sizes[d];
    v.strides[d] = out.strides[d];
  }
  v.bias_stride = bias.strides[0];
  cudaError_t launched;
  switch (out.dtype) {
    case 6: launched = launch<float>(out, bias, v, stream->handle); break;
    case 5: launched = launch<__half>(out, bias, v, stream->handle); break;
    case 15: launched = launch<__nv_bfloat16>(out, bias, v, stream->handle); break;
    default:
      return fail(AOTIRT_ERROR_TYPE, std::string("convolution bias: ") + dtype_name(out.dtype) +
                                         " is not supported (float32, float16, bfloat16)");
  }
  if (launched != cudaSuccess) return fail_cuda(launched, "launching the convolution bias kernel");
  return AOTIRT_OK;
}

}  // namespace conv_cuda
}  // namespace aotirt
