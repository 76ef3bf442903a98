// _addmm_activation's epilogue: relu, or gelu as torch applies it there
// (torch/_decomp/decompositions.py: the tanh approximation on CUDA, where
// cuBLASLt's GELU epilogue computes it; the exact erf form on the CPU).
// In place over a contiguous result; math in float (double for float64).
#pragma once

#include "runtime/errors.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace aotirt {
namespace matmul {

enum class Activation { Relu, GeluErf, GeluTanh };

aotirt_status activate_cpu(const Tensor& out, Activation act);
// Queued on `stream`, after the product.
aotirt_status activate_cuda(const Tensor& out, Activation act, Stream* stream);

}  // namespace matmul
}  // namespace aotirt
