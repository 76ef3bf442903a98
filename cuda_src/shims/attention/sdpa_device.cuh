// Device helpers that the CUDA attention kernels share (attention.cu's
// straightforward kernel and sdpa_cublas.cu's softmax).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "aotirt/aotirt.h"

namespace aotirt {
namespace attention {

// A score after the attention bias at `offset`: added when the bias is
// floating point, -inf where a bool bias is false. The bias is read through
// its dtype at run time: it is one load per score, and a template per bias
// dtype would multiply the kernels for no gain.
__device__ __forceinline__ float bias_at(const void* bias, int32_t dtype, int64_t offset, float score) {
  switch (dtype) {
    case AOTIRT_DTYPE_FLOAT16: return score + __half2float(static_cast<const __half*>(bias)[offset]);
    case AOTIRT_DTYPE_FLOAT64: return score + static_cast<float>(static_cast<const double*>(bias)[offset]);
    case AOTIRT_DTYPE_BOOL: return static_cast<const unsigned char*>(bias)[offset] ? score : -INFINITY;
    case AOTIRT_DTYPE_BFLOAT16: return score + __bfloat162float(static_cast<const __nv_bfloat16*>(bias)[offset]);
    default: return score + static_cast<const float*>(bias)[offset];
  }
}

}  // namespace attention
}  // namespace aotirt
