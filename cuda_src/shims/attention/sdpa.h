// Scaled dot-product attention for the SDPA fallbacks of AOTInductor
// libraries (sdpa_shims.cpp has the shims):
//
//   out = softmax(scale * Q K^T + bias, causal mask) V,   lse = log sum exp(...)
//
// one problem description, computed by plain loops on the CPU
// (sdpa_cpu.cpp) or by a CUDA kernel (sdpa_kernel.cu).
#pragma once

#include "runtime/stream.h"
#include "shims/attention/sdpa_problem.h"

namespace aotirt {
namespace attention {

// Rows whose keys are all masked out give zeros and a log-sum-exp of 0, as
// torch's CPU and efficient kernels do.
aotirt_status run_cpu(const Problem& p);
// Queued on `stream`, which the caller has ordered after the inputs'
// producers; never waits. The current device must be the stream's.
aotirt_status run_cuda(const Problem& p, Stream* stream);

}  // namespace attention
}  // namespace aotirt
