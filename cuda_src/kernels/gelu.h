// GELU, tanh approximation, for one element: the same expression in the CPU
// and the CUDA kernels, so a fused matmul + GELU rounds as the two separate
// kernels would.
#pragma once

#include <math.h>

#if defined(__CUDACC__)
#define KERNELS_HOST_DEVICE __host__ __device__
#else
#define KERNELS_HOST_DEVICE
#endif

namespace kernels {

KERNELS_HOST_DEVICE inline float gelu_tanh(float v) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
}

}  // namespace kernels
