// relu / gelu over a contiguous tensor (activation.h), one definition of the
// math for the CPU loop and the CUDA kernel.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

#include "runtime/dtypes.h"
#include "shims/matmul/activation.h"

namespace aotirt {
namespace matmul {
namespace {

template <typename M>
__host__ __device__ M apply(M x, Activation act) {
  switch (act) {
    case Activation::Relu: return x > M(0) ? x : (x != x ? x : M(0));  // NaN stays NaN, as torch's relu
    case Activation::GeluErf: return M(0.5) * x * (M(1) + erf(x * M(0.70710678118654752440)));
    default: {
      const M inner = M(0.79788456080286535588) * (x + M(0.044715) * x * x * x);  // sqrt(2/pi)
      return M(0.5) * x * (M(1) + tanh(inner));
    }
  }
}

template <typename T>
__host__ __device__ void apply_at(T* data, int64_t i, Activation act) {
  if constexpr (std::is_same_v<T, double>) {
    data[i] = apply<double>(data[i], act);
  } else if constexpr (std::is_same_v<T, float>) {
    data[i] = apply<float>(data[i], act);
  } else if constexpr (std::is_same_v<T, __half>) {
    data[i] = __float2half_rn(apply<float>(__half2float(data[i]), act));
  } else {
    data[i] = __float2bfloat16_rn(apply<float>(__bfloat162float(data[i]), act));
  }
}

template <typename T>
__global__ void activate_kernel(T* data, int64_t n, Activation act) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    apply_at(data, i, act);
}

template <typename Fn>
aotirt_status by_dtype(const Tensor& out, Fn&& fn) {
  switch (out.dtype) {
    case AOTIRT_DTYPE_FLOAT32: fn(static_cast<float*>(out.data())); return AOTIRT_OK;
    case AOTIRT_DTYPE_FLOAT64: fn(static_cast<double*>(out.data())); return AOTIRT_OK;
    case AOTIRT_DTYPE_FLOAT16: fn(static_cast<__half*>(out.data())); return AOTIRT_OK;
    case AOTIRT_DTYPE_BFLOAT16: fn(static_cast<__nv_bfloat16*>(out.data())); return AOTIRT_OK;
    default:
      return fail(AOTIRT_ERROR_TYPE, std::string("_addmm_activation: unsupported dtype ") + dtype_name(out.dtype));
  }
}

}  // namespace

aotirt_status activate_cpu(const Tensor& out, Activation act) {
  const int64_t n = out.numel();
  return by_dtype(out, [&](auto* data) {
    for (int64_t i = 0; i < n; ++i) apply_at(data, i, act);
  });
}

aotirt_status activate_cuda(const Tensor& out, Activation act, Stream* stream) {
  const int64_t n = out.numel();
  if (n == 0) return AOTIRT_OK;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((n + 255) / 256, int64_t{1} << 16));
  AOTIRT_TRY(by_dtype(out, [&](auto* data) { activate_kernel<<<blocks, 256, 0, stream->handle>>>(data, n, act); }));
  AOTIRT_CUDA_TRY(cudaGetLastError());
  return AOTIRT_OK;
}

}  // namespace matmul
}  // namespace aotirt
