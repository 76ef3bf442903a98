// conv_gemm.h: a 1x1 channels-last convolution as one cuBLAS GEMM.

#include "shims/convolution/conv_gemm.h"

#include <climits>
#include <string>

#include "runtime/errors.h"
#include "shims/libs/cublas.h"

namespace aotirt {
namespace conv_cuda {
namespace {

constexpr int kCompute32FFastTF32 = 77;  // CUBLAS_COMPUTE_32F_FAST_TF32 (cublas_api.h)
constexpr int kOpN = 0, kOpT = 1;        // CUBLAS_OP_N, CUBLAS_OP_T

bool fits_int(int64_t v) { return v > 0 && v <= INT_MAX; }

}  // namespace

bool gemm_offered(const conv_layout::MatmulShape& shape) {
  if (!fits_int(shape.rows) || !fits_int(shape.inner) || !fits_int(shape.cols)) return false;
  const cublas::Api* api = nullptr;
  if (cublas::api("the cuDNN tuning's GEMM candidate", &api) == AOTIRT_OK) return true;
  clear_error();  // no cuBLAS: cuDNN's engines alone are measured
  return false;
}

aotirt_status run_gemm(const char* who, const conv_layout::MatmulShape& shape, int32_t dtype, bool tf32,
                       const void* x, const void* w, void* y, int device, const StreamRef& stream,
                       const GemmBatch& batch) {
  if (!fits_int(batch.count))
    return fail(AOTIRT_ERROR_AOTI, std::string(who) + ": " + std::to_string(batch.count) +
                                       " products in one cuBLAS call: more than its int takes");
  const cublas::Api* api = nullptr;
  AOTIRT_TRY(cublas::api(who, &api));
  cublas::Handle handle = nullptr;
  AOTIRT_TRY(cublas::thread_handle(who, device, &handle));
  StorageRef workspace;  // cuBLAS's, for this call (freed stream-ordered after it)
  AOTIRT_TRY(cublas::bind_stream(*api, who, handle, stream, &workspace));
  // Column-major, as cuBLAS reads them: y is [cols, rows] with ld cols, w
  // [inner, cols] with ld inner (taken transposed), x [inner, rows] with ld
  // inner. So y = w^T x there, which is y = x w^T row-major.
  const int rows = static_cast<int>(shape.rows), inner = static_cast<int>(shape.inner),
            cols = static_cast<int>(shape.cols);
  const cudaDataType_t type = cublas::data_type(dtype);
  const int compute = dtype == AOTIRT_DTYPE_FLOAT32 && tf32 ? kCompute32FFastTF32 : cublas::kCompute32F;
  const float alpha = 1.0f, beta = 0.0f;
  if (batch.count == 1)
    return cublas::check(*api, who, "cublasGemmEx",
                         api->gemm(handle, kOpT, kOpN, cols, rows, inner, &alpha, w, type, inner, x, type, inner,
                                   &beta, y, type, cols, compute, cublas::kGemmDefault));
  return cublas::check(*api, who, "cublasGemmStridedBatchedEx",
                       api->gemm_strided_batched(handle, kOpT, kOpN, cols, rows, inner, &alpha, w, type, inner,
                                                 batch.w_stride, x, type, inner, batch.x_stride, &beta, y, type, cols,
                                                 batch.y_stride, static_cast<int>(batch.count), compute,
                                                 cublas::kGemmDefault));
}

}  // namespace conv_cuda
}  // namespace aotirt
