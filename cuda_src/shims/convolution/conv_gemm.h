// A 1x1 channels-last convolution (conv_layout::as_matmul) as one cuBLAS
// GEMM: the candidate that a tuned run (AOTIRT_CUDNN_TUNE) measures beside
// cuDNN's engines for such a convolution, and runs where it was faster by
// more than the noise. Untuned runs never use it: they run cuDNN's
// heuristics' engine, as torch does.
//
// Why offer it: cuDNN runs many of these small products (mobilenet's
// pointwise layers) as an implicit GEMM followed by a split-K reduction, two
// kernels; cuBLAS's heuristics pick among its own GEMM kernels for the same
// product. Which is faster depends on the shape, hence measured, never
// assumed.
#pragma once

#include <cstdint>

#include "aotirt/aotirt.h"
#include "runtime/stream.h"
#include "shims/convolution/conv_layout.h"

namespace aotirt {
namespace conv_cuda {

// The candidate's name, in the tuning's debug log and its choices' file.
constexpr const char* kGemmEngine = "cublas_gemm";

// Whether the candidate can run `shape` here: cuBLAS loads (it is opened
// on first use, as for the matmul shims; a failure is not an error here:
// the candidate is then not offered) and every size fits cuBLAS's int.
bool gemm_offered(const conv_layout::MatmulShape& shape);

// `count` such products, one cuBLAS call: the n-th reads x, w and writes y
// n times their strides (in elements; 0 reuses one operand) past the first.
struct GemmBatch {
  int64_t count = 1;
  int64_t x_stride = 0, w_stride = 0, y_stride = 0;
};

// y[rows, cols] = x[rows, inner] times w[cols, inner] transposed, each
// row-major and dense, in `dtype` (float32, float16 or bfloat16; float math,
// with TF32 for float32 when `tf32`, as the convolution allows it), queued
// on `stream` (its device current); `batch.count` of them where given.
aotirt_status run_gemm(const char* who, const conv_layout::MatmulShape& shape, int32_t dtype, bool tf32,
                       const void* x, const void* w, void* y, int device, const StreamRef& stream,
                       const GemmBatch& batch = GemmBatch());

}  // namespace conv_cuda
}  // namespace aotirt
