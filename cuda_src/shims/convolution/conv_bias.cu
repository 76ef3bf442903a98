#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "runtime/errors.h"
#include "shims/convolution/conv_bias.h"

// Two kernels. The output of a convolution is dense (new_tensor gives it the
// contiguous or channels-last strides torch's fake tensor had), so the usual
// one walks its memory in order, as [outer, channels, inner] where `inner` is
// the product of the sizes laid out inside the channel dimension (the
// spatial size for contiguous outputs, 1 for channels-last ones): no
// per-dimension index arithmetic, 32-bit indices when they fit, and four
// elements per load and store when the layout and the pointer allow it. It
// is memory-bound, as torch's output.add_(bias) is. The other, for any
// strided output, decomposes each index per dimension (64-bit divisions:
// an order of magnitude slower; kept for views no caller makes today).

namespace aotirt {
namespace conv_cuda {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 1u << 16;  // a grid-stride loop covers the rest
constexpr int kVector = 4;

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
__device__ __forceinline__ float from_float(float v, float) { return v; }
__device__ __forceinline__ __half from_float(float v, __half) { return __float2half_rn(v); }
__device__ __forceinline__ __nv_bfloat16 from_float(float v, __nv_bfloat16) { return __float2bfloat16_rn(v); }

template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// out, dense, as [outer, channels, inner] in memory order; element i has
// channel (i / inner) % channels. With V > 1, the V elements of a group
// share one channel when inner % V == 0 (`shared`), or are V consecutive
// channels when inner == 1 and channels % V == 0.
template <typename T, typename Index, int V, bool shared>
__global__ void add_bias_dense(T* out, const T* bias, Index groups, Index inner, Index channels,
                               int64_t bias_stride) {
  const Index step = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index g = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += step) {
    const Index first = g * V;
    Pack<T, V> p = *reinterpret_cast<const Pack<T, V>*>(out + first);
    if (shared) {
      const float b = to_float(bias[static_cast<int64_t>((first / inner) % channels) * bias_stride]);
#pragma unroll
      for (int j = 0; j < V; ++j) p.v[j] = from_float(to_float(p.v[j]) + b, T());
    } else {
      const Index c = first % channels;
#pragma unroll
      for (int j = 0; j < V; ++j)
        p.v[j] = from_float(to_float(p.v[j]) + to_float(bias[static_cast<int64_t>(c + j) * bias_stride]), T());
    }
    *reinterpret_cast<Pack<T, V>*>(out + first) = p;
  }
}

template <typename T>
__global__ void add_bias_strided(T* out, const T* bias, View v) {
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

unsigned grid_for(int64_t work) {
  const int64_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// Whether out is dense (its elements fill numel consecutive slots from
// data(), in some order of its dimensions); if so, `inner` receives the
// product of the sizes of the dimensions laid out inside dimension 1.
bool dense_around_channels(const View& v, int64_t* inner) {
  int order[5];
  int n = 0;
  for (int d = 0; d < v.ndim; ++d)
    if (v.sizes[d] > 1) order[n++] = d;  // a size-1 dimension's stride never matters
  for (int i = 1; i < n; ++i)  // by stride, largest first (insertion sort: at most 5)
    for (int j = i; j > 0 && v.strides[order[j - 1]] < v.strides[order[j]]; --j) {
      const int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  int64_t expected = 1, below_channels = v.numel;  // size-1 channels: all of it shares one
  for (int i = n - 1; i >= 0; --i) {
    const int d = order[i];
    if (v.strides[d] != expected) return false;
    if (d == 1) below_channels = expected;
    expected *= v.sizes[d];
  }
  *inner = below_channels;
  return true;
}

template <typename T, typename Index>
cudaError_t launch_dense(T* out, const T* bias, const View& v, int64_t inner, cudaStream_t stream) {
  const Index channels = static_cast<Index>(v.sizes[1]);
  const bool aligned = reinterpret_cast<uintptr_t>(out) % (sizeof(T) * kVector) == 0;
  if (aligned && inner % kVector == 0) {
    const int64_t groups = v.numel / kVector;
    add_bias_dense<T, Index, kVector, true><<<grid_for(groups), kThreads, 0, stream>>>(
        out, bias, static_cast<Index>(groups), static_cast<Index>(inner), channels, v.bias_stride);
  } else if (aligned && inner == 1 && v.sizes[1] % kVector == 0) {
    const int64_t groups = v.numel / kVector;
    add_bias_dense<T, Index, kVector, false><<<grid_for(groups), kThreads, 0, stream>>>(
        out, bias, static_cast<Index>(groups), static_cast<Index>(inner), channels, v.bias_stride);
  } else {
    add_bias_dense<T, Index, 1, true><<<grid_for(v.numel), kThreads, 0, stream>>>(
        out, bias, static_cast<Index>(v.numel), static_cast<Index>(inner), channels, v.bias_stride);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch(const Tensor& out, const Tensor& bias, const View& v, cudaStream_t stream) {
  T* o = static_cast<T*>(out.data());
  const T* b = static_cast<const T*>(bias.data());
  int64_t inner = 0;
  if (dense_around_channels(v, &inner)) {
    // The grid-stride loop's last index stays below numel + grid * threads.
    const int64_t headroom = static_cast<int64_t>(kMaxBlocks) * kThreads;
    if (v.numel + headroom <= static_cast<int64_t>(UINT32_MAX))
      return launch_dense<T, uint32_t>(o, b, v, inner, stream);
    return launch_dense<T, uint64_t>(o, b, v, inner, stream);
  }
  add_bias_strided<T><<<grid_for(v.numel), kThreads, 0, stream>>>(o, b, v);
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
