// The bias of a CUDA convolution, added after cuDNN's convolution (as torch's
// cudnn_convolution path adds it, output.add_(bias)): out[n, c, ...] +=
// bias[c], in float, for any dense or strided out of up to 5 dimensions. A
// dense out (every convolution output is) takes a memory-bound kernel with
// 32-bit indices and 4-element loads; others a per-dimension one.
#pragma once

#include "aotirt/aotirt.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace aotirt {
namespace conv_cuda {

// Queued on `stream`, which is ordered after out's and bias's producers.
// out and bias share one dtype: float32, float16 or bfloat16.
aotirt_status add_channel_bias(const Tensor& out, const Tensor& bias, Stream* stream);

}  // namespace conv_cuda
}  // namespace aotirt
