// The CUDA matrix multiply behind aoti_torch_cuda_{mm,addmm,bmm,baddbmm}_out,
// addmv, _addmm_activation and _int_mm_out: one
// cuBLAS GEMM (strided-batched for bmm) queued on the current stream of out's
// device. Nothing here waits for the GPU; temporaries are stream-ordered.
// Which operand goes in transposed, and what must be copied first, is
// decided by gemm_layout.h.

#include <algorithm>
#include <climits>
#include <string>

#include "runtime/copy.h"
#include "runtime/dtypes.h"
#include "runtime/errors.h"
#include "runtime/stream.h"
#include "shims/libs/cublas.h"
#include "shims/matmul/gemm.h"
#include "shims/matmul/gemm_layout.h"

namespace aotirt {
namespace matmul {
namespace {

// A contiguous copy of `t`, queued on `stream`.
aotirt_status contiguous_copy(const Tensor& t, const StreamRef& stream, Tensor* out) {
  AOTIRT_TRY(empty_like(t, stream, out));
  return copy_device_to_device(*out, t, stream.get());
}

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

}  // namespace

aotirt_status run_cuda(const Problem& p, StreamRef* stream_out) {
  if (p.batch == 0 || p.m == 0 || p.n == 0) return AOTIRT_OK;  // no output elements
  const int device = p.out.storage->device_index;
  AOTIRT_TRY(check_device_usable(device));
  DeviceGuard guard;  // a cuBLAS handle belongs to the device current at its creation
  AOTIRT_TRY(guard.enter(device));
  StreamRef stream;
  AOTIRT_TRY(stream_for_device(device, &stream));
  AOTIRT_TRY(use_on(p.a, stream.get()));
  AOTIRT_TRY(use_on(p.b, stream.get()));
  if (p.has_self) AOTIRT_TRY(use_on(p.self, stream.get()));
  AOTIRT_TRY(use_on(p.out, stream.get()));  // earlier work on out's memory comes first

  const cublas::Api* api = nullptr;
  AOTIRT_TRY(cublas::api(p.name, &api));
  cublas::Handle handle = nullptr;
  AOTIRT_TRY(cublas::thread_handle(p.name, device, &handle));
  StorageRef workspace;  // cuBLAS's, for this call (freed stream-ordered after it)
  AOTIRT_TRY(cublas::bind_stream(*api, p.name, handle, stream, &workspace));

  const gemm_layout::Plan plan =
      gemm_layout::plan(p.batch, p.m, p.n, p.k, p.a.strides, p.b.strides, p.out.strides, p.out_overlaps_input);
  const int64_t limits[] = {plan.m, plan.n, plan.k, plan.x.ld, plan.y.ld, plan.c.ld, p.batch};
  for (int64_t v : limits)
    if (!fits_int(v))
      return fail(AOTIRT_ERROR_VALUE, std::string(p.name) + ": a size or leading dimension of " + std::to_string(v) +
                                          " exceeds cuBLAS's 32-bit limit");

  // The copies the plan asks for are contiguous, with the strides it assumed.
  Tensor scratch, a_copy, b_copy, zeros;
  if (plan.scratch) AOTIRT_TRY(empty_like(p.out, stream, &scratch));
  const Tensor& target = plan.scratch ? scratch : p.out;
  // addmm: cuBLAS computes C = alpha * X Y + beta * C, so self goes into C first.
  const bool self_in_place = !plan.scratch && p.out_is_self;
  if (p.has_self && !self_in_place)
    AOTIRT_TRY(copy_device_to_device(target, p.self, stream.get()));

  gemm_layout::Operand x = plan.x, y = plan.y;
  const void* x_data;
  const void* y_data;
  int64_t k = plan.k;
  double alpha = p.alpha;
  if (p.k == 0 || p.alpha == 0.0) {
    // No product term: C = beta * C (or 0). torch and BLAS both skip the
    // factors here, so inf/NaN in them cannot leak in; rather than trust
    // cuBLAS with k == 0, it gets zero factors of depth 1 and alpha 0.
    Tensor shape = p.out;  // only its dtype and device matter to empty_like
    shape.ndim = 1;
    shape.sizes[0] = std::max(plan.m, plan.n);
    AOTIRT_TRY(empty_like(shape, stream, &zeros));
    AOTIRT_CUDA_TRY(cudaMemsetAsync(zeros.data(), 0, zeros.numel() * zeros.itemsize(), stream->handle));
    x = gemm_layout::Operand{gemm_layout::kOpN, std::max<int64_t>(plan.m, 1), 0};
    y = gemm_layout::Operand{gemm_layout::kOpN, 1, 0};
    x_data = y_data = zeros.data();
    k = 1;
    alpha = 0.0;
  } else {
    if (plan.copy_a) AOTIRT_TRY(contiguous_copy(p.a, stream, &a_copy));
    if (plan.copy_b) AOTIRT_TRY(contiguous_copy(p.b, stream, &b_copy));
    const void* a_data = plan.copy_a ? a_copy.data() : p.a.data();
    const void* b_data = plan.copy_b ? b_copy.data() : p.b.data();
    x_data = plan.transposed ? b_data : a_data;
    y_data = plan.transposed ? a_data : b_data;
  }
  const gemm_layout::Operand& c = plan.c;
  void* c_data = target.data();

  // Scalars in the compute type: float math for float32 (no TF32, torch's
  // default for float32 matmul) and for float16/bfloat16, double for float64.
  // _int_mm: int8 factors, int32 out and int32 math with int32 scalars.
  const bool f64 = p.out.dtype == AOTIRT_DTYPE_FLOAT64;
  const int compute = p.int8 ? cublas::kCompute32I : f64 ? cublas::kCompute64F : cublas::kCompute32F;
  const float alpha_f = static_cast<float>(alpha), beta_f = static_cast<float>(p.beta);
  const int32_t alpha_i = static_cast<int32_t>(alpha), beta_i = 0;
  const void* alpha_ptr = p.int8 ? static_cast<const void*>(&alpha_i) : f64 ? static_cast<const void*>(&alpha) : &alpha_f;
  const void* beta_ptr = p.int8 ? static_cast<const void*>(&beta_i) : f64 ? static_cast<const void*>(&p.beta) : &beta_f;
  const cudaDataType_t type = cublas::data_type(p.int8 ? AOTIRT_DTYPE_INT8 : p.out.dtype);
  const cudaDataType_t c_type = cublas::data_type(p.out.dtype);
  const int m = static_cast<int>(plan.m), n = static_cast<int>(plan.n), kk = static_cast<int>(k);
  if (p.batch == 1) {
    AOTIRT_TRY(cublas::check(*api, p.name, "cublasGemmEx",
                             api->gemm(handle, x.op, y.op, m, n, kk, alpha_ptr, x_data, type, static_cast<int>(x.ld),
                                       y_data, type, static_cast<int>(y.ld), beta_ptr, c_data,
                                       c_type, static_cast<int>(c.ld), compute, cublas::kGemmDefault)));
  } else {
    // A strided tensor's matrices are evenly spaced, so one strided-batched
    // call covers every bmm (a broadcast factor has batch stride 0).
    AOTIRT_TRY(cublas::check(
        *api, p.name, "cublasGemmStridedBatchedEx",
        api->gemm_strided_batched(handle, x.op, y.op, m, n, kk, alpha_ptr, x_data, type, static_cast<int>(x.ld),
                                  x.batch_stride, y_data, type, static_cast<int>(y.ld), y.batch_stride, beta_ptr,
                                  c_data, c_type, static_cast<int>(c.ld), c.batch_stride,
                                  static_cast<int>(p.batch), compute, cublas::kGemmDefault)));
  }
  if (plan.scratch) AOTIRT_TRY(copy_device_to_device(p.out, scratch, stream.get()));
  *stream_out = std::move(stream);
  return AOTIRT_OK;
}

}  // namespace matmul
}  // namespace aotirt
