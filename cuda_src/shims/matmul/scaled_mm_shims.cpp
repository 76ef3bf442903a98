// aoti_torch_{cpu,cuda}__scaled_mm and _scaled_mm_out: torch's signatures
// (c_shim_cpu.h and c_shim_cuda.h are the same), the checks (scaled_mm.h),
// then the device's run.

#include <algorithm>
#include <string>

#include "aotirt/shim.h"
#include "runtime/dtypes.h"
#include "shims/matmul/scaled_mm.h"

namespace aotirt {
namespace scaled_mm {
namespace {

aotirt_status refuse(const char* name, const std::string& why) {
  return fail(AOTIRT_ERROR_VALUE, std::string(name) + ": " + why);
}

aotirt_status refuse_type(const char* name, const std::string& why) {
  return fail(AOTIRT_ERROR_TYPE, std::string(name) + ": " + why);
}

bool on(const Tensor* t, int32_t device_type, int device) {
  return t->storage && t->storage->device_type == device_type &&
         (device_type == AOTIRT_DEVICE_CPU || t->storage->device_index == device);
}

bool one_float(const Tensor* t) { return t->dtype == AOTIRT_DTYPE_FLOAT32 && t->numel() == 1; }

// The bias dtypes cuBLASLt's fp8 GEMMs take for an output dtype.
bool bias_allowed(int32_t bias, int32_t out) {
  if (out == AOTIRT_DTYPE_FLOAT16) return bias == AOTIRT_DTYPE_FLOAT16;
  if (is_float8(out)) return bias == AOTIRT_DTYPE_FLOAT16 || bias == AOTIRT_DTYPE_BFLOAT16;
  return bias == AOTIRT_DTYPE_BFLOAT16;  // float32 and bfloat16 outputs
}

}  // namespace

bool is_float8(int32_t dtype) { return dtype == AOTIRT_DTYPE_FLOAT8_E4M3FN || dtype == AOTIRT_DTYPE_FLOAT8_E5M2; }

aotirt_status prepare(const char* name, int32_t device_type, const Tensor* a, const Tensor* b, const Tensor* scale_a,
                      const Tensor* scale_b, const Tensor* bias, const Tensor* scale_result,
                      const int32_t* out_dtype, int32_t use_fast_accum, Tensor* out, Call* call) {
  if (!a || !b || !scale_a || !scale_b || !call) return null_argument(name);
  const char* device_name = device_type == AOTIRT_DEVICE_CPU ? "CPU" : "CUDA";
  const int device = a->storage ? a->storage->device_index : 0;
  for (const Tensor* t : {a, b, scale_a, scale_b, bias, scale_result, static_cast<const Tensor*>(out)})
    if (t && !on(t, device_type, device))
      return refuse(name, std::string("every tensor must be a ") + device_name + " tensor on self's device");
  if (a->ndim != 2 || b->ndim != 2) return refuse(name, "self and mat2 must be matrices");
  if (!is_float8(a->dtype) || !is_float8(b->dtype))
    return refuse_type(name, std::string("self and mat2 must be float8_e4m3fn or float8_e5m2, not ") +
                                 dtype_name(a->dtype) + " and " + dtype_name(b->dtype));
  if (a->dtype == AOTIRT_DTYPE_FLOAT8_E5M2 && b->dtype == AOTIRT_DTYPE_FLOAT8_E5M2)
    return refuse_type(name, "two float8_e5m2 matrices cannot be multiplied (neither torch nor cuBLASLt does it)");
  const int64_t m = a->sizes[0], k = a->sizes[1], n = b->sizes[1];
  if (b->sizes[0] != k)
    return refuse(name, "self is [" + std::to_string(m) + ", " + std::to_string(k) + "] and mat2 [" +
                            std::to_string(b->sizes[0]) + ", " + std::to_string(n) + "]: k differs");
  if (k % 16 != 0 || n % 16 != 0)
    return refuse(name, "mat2's sizes [" + std::to_string(k) + ", " + std::to_string(n) +
                            "] must be multiples of 16 (torch's rule for float8 GEMMs)");
  if (a->strides[1] != 1 || a->strides[0] < std::max<int64_t>(k, 1))
    return refuse(name, "self must be row-major (strides [>= k, 1]), as torch requires");
  if (b->strides[0] != 1 || b->strides[1] < std::max<int64_t>(k, 1))
    return refuse(name, "mat2 must be column-major (strides [1, >= k]: mat2.t() contiguous), as torch requires");
  if (!one_float(scale_a) || !one_float(scale_b))
    return refuse(name, "scale_a and scale_b must be one-element float32 tensors (per-tensor scaling; row-wise "
                        "scales are not supported here)");
  int32_t dtype = out_dtype ? *out_dtype : (out ? out->dtype : a->dtype);
  if (out && out->dtype != dtype)
    return refuse_type(name, std::string("out is ") + dtype_name(out->dtype) + " but out_dtype is " +
                                 dtype_name(dtype));
  if (dtype != AOTIRT_DTYPE_FLOAT32 && dtype != AOTIRT_DTYPE_FLOAT16 && dtype != AOTIRT_DTYPE_BFLOAT16 &&
      !is_float8(dtype))
    return refuse_type(name, std::string("out_dtype must be float32, float16, bfloat16 or a float8, not ") +
                                 dtype_name(dtype));
  if (bias && (bias->ndim != 1 || bias->sizes[0] != n || (bias->strides[0] != 1 && n > 1)))
    return refuse(name, "bias must be a contiguous vector of n = " + std::to_string(n) + " elements");
  if (bias && !bias_allowed(bias->dtype, dtype))
    return refuse_type(name, std::string("a ") + dtype_name(bias->dtype) + " bias cannot go with a " +
                                 dtype_name(dtype) + " result (bfloat16 for float32 and bfloat16 results, float16 "
                                 "for float16, either for float8)");
  if (scale_result && (!is_float8(dtype) || !one_float(scale_result)))
    return refuse(name, "scale_result must be a one-element float32 tensor, and only with a float8 result");
  if (out && (out->ndim != 2 || out->sizes[0] != m || out->sizes[1] != n || !out->is_contiguous()))
    return refuse(name, "out must be a contiguous [" + std::to_string(m) + ", " + std::to_string(n) + "] tensor");
  call->name = name;
  call->a = a;
  call->b = b;
  call->scale_a = scale_a;
  call->scale_b = scale_b;
  call->bias = bias;
  call->scale_result = scale_result;
  call->out_dtype = dtype;
  call->fast_accum = use_fast_accum != 0;
  call->m = m;
  call->n = n;
  call->k = k;
  if (out) {
    call->out = out;
  } else {
    const int64_t sizes[2] = {m, n};
    Tensor* made = nullptr;
    AOTIRT_TRY(new_tensor(2, sizes, nullptr, dtype, device_type, device, &made));
    call->made.reset(made);
    call->out = made;
  }
  return AOTIRT_OK;
}

}  // namespace scaled_mm
}  // namespace aotirt

namespace {

const aotirt::Tensor* optional(AtenTensorHandle* h) { return h ? *h : nullptr; }

AOTITorchError scaled(const char* name, int32_t device_type, AtenTensorHandle out, AtenTensorHandle self,
                      AtenTensorHandle mat2, AtenTensorHandle scale_a, AtenTensorHandle scale_b,
                      AtenTensorHandle* bias, AtenTensorHandle* scale_result, int32_t* out_dtype,
                      int32_t use_fast_accum, AtenTensorHandle* ret0) {
  using namespace aotirt;
  return shim(name, [&]() -> aotirt_status {
    if (!out && !ret0) return null_argument(name);
    scaled_mm::Call call;
    AOTIRT_TRY(scaled_mm::prepare(name, device_type, self, mat2, scale_a, scale_b, optional(bias),
                                  optional(scale_result), out_dtype, use_fast_accum, out, &call));
    AOTIRT_TRY(device_type == AOTIRT_DEVICE_CPU ? scaled_mm::run_cpu(call) : scaled_mm::run_cuda(call));
    if (ret0) *ret0 = call.made.release();
    return AOTIRT_OK;
  });
}

}  // namespace

// torch's _scaled_mm (a new output) and _scaled_mm.out, per device, each
// named in full (the name errors carry).
#define AOTIRT_SCALED_MM_SHIMS(scaled_mm, scaled_mm_out, DEVICE_TYPE)                                                  \
  AOTITorchError scaled_mm(AtenTensorHandle self, AtenTensorHandle mat2, AtenTensorHandle scale_a,                     \
                           AtenTensorHandle scale_b, AtenTensorHandle* bias, AtenTensorHandle* scale_result,           \
                           int32_t* out_dtype, int32_t use_fast_accum, AtenTensorHandle* ret0) {                       \
    return scaled(#scaled_mm, DEVICE_TYPE, nullptr, self, mat2, scale_a, scale_b, bias, scale_result, out_dtype,       \
                  use_fast_accum, ret0);                                                                               \
  }                                                                                                                    \
  AOTITorchError scaled_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2,                     \
                               AtenTensorHandle scale_a, AtenTensorHandle scale_b, AtenTensorHandle* bias,             \
                               AtenTensorHandle* scale_result, int32_t* out_dtype, int32_t use_fast_accum) {           \
    if (!out) return aotirt::shim(#scaled_mm_out, [] { return aotirt::null_argument(#scaled_mm_out); });               \
    return scaled(#scaled_mm_out, DEVICE_TYPE, out, self, mat2, scale_a, scale_b, bias, scale_result, out_dtype,       \
                  use_fast_accum, nullptr);                                                                            \
  }

extern "C" {

AOTIRT_SCALED_MM_SHIMS(aoti_torch_cpu__scaled_mm, aoti_torch_cpu__scaled_mm_out, AOTIRT_DEVICE_CPU)
AOTIRT_SCALED_MM_SHIMS(aoti_torch_cuda__scaled_mm, aoti_torch_cuda__scaled_mm_out, AOTIRT_DEVICE_CUDA)

}  // extern "C"
