// addmm and _addmm_activation on CUDA as torch runs them when self is a
// Linear's bias: one cuBLASLt matmul whose epilogue adds the bias vector
// (and applies relu or gelu) as it writes the product, in place of a bias
// copy, a GEMM and an activation kernel.
//
// torch (aten/src/ATen/native/cuda/Blas.cpp, isInputCompliesAddmmCudaLt)
// takes this path when beta == 1, self is a contiguous [N] vector, the
// result is a contiguous 2-D tensor, the dtype is float32/float16/bfloat16
// and every size of mat1 and mat2 is above 1; otherwise it runs the GEMM
// with self copied into the result first, then relu / gelu(approximate=
// "tanh") in place. Here self may also be any broadcast row ([1, N], or [N]
// expanded to [M, N] with stride 0, as Inductor passes a Linear's bias).
// float64 stays on cuBLAS, as do layouts cuBLASLt would need copies for.
#pragma once

#include "aotirt/aotirt.h"
#include "runtime/stream.h"
#include "shims/matmul/gemm.h"

namespace aotirt {
namespace matmul {

enum class Epilogue { Bias, ReluBias, GeluBias };

// out = epilogue(alpha * (a @ b) + self row), queued as one cublasLtMatmul
// on the current stream of out's device, which `stream` then receives.
// *ran is false (and nothing is queued) when the Problem is not one this
// path takes: the caller runs run_cuda (and its own activation) instead.
aotirt_status run_cuda_epilogue(const Problem& p, Epilogue epilogue, StreamRef* stream, bool* ran);

}  // namespace matmul
}  // namespace aotirt
