// The kernels of the encoder/decoder example models, twice: plain C++ in
// kernels::cpu (the CPU builds) and CUDA in kernels::cuda (the CUDA builds).
//
// The two sets have the same signatures (kernels_api.inc, declared once into
// both namespaces), and kernels::active names the one this build uses. All
// tensors are contiguous, row-major float32 unless stated; pointers are host
// memory for kernels::cpu and device memory for kernels::cuda.
//
// Every function returns 0 on success. The CUDA ones launch on `stream` (a
// cudaStream_t), never wait for the GPU, and return the cudaError_t of
// cudaGetLastError() after the launch (or cudaErrorInvalidValue, without
// launching, for sizes they cannot launch). The CPU ones ignore `stream` and
// cannot fail.
#pragma once

#include <cstdint>

namespace kernels {
namespace cpu {
#include "kernels_api.inc"
}  // namespace cpu

// The same kernels on a CUDA stream. The token of embedding() is read on the
// device: it never goes through the host.
namespace cuda {
#include "kernels_api.inc"

// 32 KiB of scores, plus 4 KiB of partial sums, within the 48 KiB of shared
// memory a block gets by default.
constexpr int64_t kMaxAttentionLength = 8192;

}  // namespace cuda

// The set this build runs: a model or test file writes
// `namespace k = kernels::active;` and the rest of its code is the same for
// both builds.
#if defined(AOTIRT_MODEL_CUDA)
namespace active = cuda;
#else
namespace active = cpu;
#endif

}  // namespace kernels
