#include <cuda_runtime.h>

#include "kernels.h"

namespace kernels {
namespace cuda {
namespace {

constexpr int kThreads = 128;

// Block (s, g) computes out[s, g*kThreads .. +kThreads): one output channel
// per thread. All threads of a block read the same input element at once
// (a broadcast), and sum in the CPU version's order: channels, then taps.
__global__ void conv1d_k3_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                 const float* __restrict__ bias, float* __restrict__ out, int64_t t,
                                 int64_t cin, int64_t cout) {
  const int64_t s = blockIdx.x;
  const int64_t o = static_cast<int64_t>(blockIdx.y) * kThreads + threadIdx.x;
  if (o >= cout) return;
  const float* wo = w + o * cin * 3;
  float acc = bias ? bias[o] : 0.0f;
  for (int64_t c = 0; c < cin; ++c) {
#pragma unroll
    for (int j = 0; j < 3; ++j) {
      const int64_t row = s + j - 1;  // padding 1: rows -1 and t are zero
      if (row >= 0 && row < t) acc = fmaf(wo[c * 3 + j], x[row * cin + c], acc);
    }
  }
  out[s * cout + o] = acc;
}

}  // namespace

int conv1d_k3(const float* x, const float* w, const float* bias, float* out, int64_t t, int64_t cin,
              int64_t cout, void* stream) {
  if (t == 0 || cout == 0) return cudaSuccess;
  const int64_t groups = (cout + kThreads - 1) / kThreads;
  if (t > 0x7fffffff || groups > 65535) return cudaErrorInvalidValue;  // grid limits
  dim3 grid(static_cast<unsigned>(t), static_cast<unsigned>(groups));
  conv1d_k3_kernel<<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, w, bias, out, t, cin, cout);
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace kernels
