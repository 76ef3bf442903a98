// scaled_mm::run_cpu: the float8 GEMM as a plain loop, the products summed
// in double, then scaled by scale_a * scale_b, the bias added and the sum
// rounded once to the output dtype. float8 outputs are refused on the CPU
// (torch's CPU emulation rounds them without saturating, cuBLASLt
// saturates; aotirt takes no side it cannot test against torch here).

#include <cuda_fp8.h>  // host-callable float8 conversions

#include <string>
#include <type_traits>

#include "runtime/dtypes.h"
#include "shims/host_elements.h"
#include "shims/matmul/scaled_mm.h"

namespace aotirt {
namespace scaled_mm {
namespace {

float float8_value(uint8_t bits, int32_t dtype) {
  const __half_raw h = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(bits),
                                               dtype == AOTIRT_DTYPE_FLOAT8_E5M2 ? __NV_E5M2 : __NV_E4M3);
  return __half2float(__half(h));
}

double value_at(const Tensor& t, int64_t i) {
  const void* p = t.data();
  switch (t.dtype) {
    case AOTIRT_DTYPE_FLOAT32: return static_cast<const float*>(p)[i];
    case AOTIRT_DTYPE_FLOAT16: return host::to_double(static_cast<const __half*>(p)[i]);
    case AOTIRT_DTYPE_BFLOAT16: return host::to_double(static_cast<const __nv_bfloat16*>(p)[i]);
    default: return 0.0;
  }
}

template <typename Out>
void loop(const Call& c) {
  const Tensor &a = *c.a, &b = *c.b;
  const uint8_t* x = static_cast<const uint8_t*>(a.data());
  const uint8_t* y = static_cast<const uint8_t*>(b.data());
  const double scale = value_at(*c.scale_a, 0) * value_at(*c.scale_b, 0);
  Out* out = static_cast<Out*>(c.out->data());
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      double sum = 0.0;
      for (int64_t p = 0; p < c.k; ++p)
        sum += static_cast<double>(float8_value(x[i * a.strides[0] + p], a.dtype)) *
               float8_value(y[p + j * b.strides[1]], b.dtype);
      sum *= scale;
      if (c.bias) sum += value_at(*c.bias, j * (c.n > 1 ? c.bias->strides[0] : 0));
      out[i * c.n + j] = host::from_double<Out>(sum);
    }
}

}  // namespace

aotirt_status run_cpu(const Call& call) {
  switch (call.out_dtype) {
    case AOTIRT_DTYPE_FLOAT32: loop<float>(call); return AOTIRT_OK;
    case AOTIRT_DTYPE_FLOAT16: loop<__half>(call); return AOTIRT_OK;
    case AOTIRT_DTYPE_BFLOAT16: loop<__nv_bfloat16>(call); return AOTIRT_OK;
    default:
      return fail(AOTIRT_ERROR_TYPE, std::string(call.name) + ": a " + dtype_name(call.out_dtype) +
                                         " result is not supported on the CPU (float32, float16 or bfloat16)");
  }
}

}  // namespace scaled_mm
}  // namespace aotirt
