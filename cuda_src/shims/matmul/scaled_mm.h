// aten._scaled_mm / _scaled_mm.out with per-tensor scales, shared by the
// CUDA path (cuBLASLt, scaled_mm_cuda.cpp) and the CPU loop
// (scaled_mm_cpu.cpp):
//   out = (mat1 @ mat2) * scale_a * scale_b (+ bias), in out_dtype,
// mat1 [m, k] and mat2 [k, n] float8 (e4m3fn or e5m2, not both e5m2) with
// torch's layout rules: mat1 row-major, mat2 column-major (mat2.t()
// contiguous), k and n multiples of 16; scale_a and scale_b one-element
// float32 tensors (row-wise scales are refused); bias [n] bfloat16 (float32
// and bfloat16 outputs), float16 (float16 outputs) or either (float8
// outputs), as cuBLASLt takes them; scale_result, the multiplier of a
// float8 output (cuBLASLt's D scale, as torch passes it), only with one;
// out_dtype defaults to mat1's dtype. The result is a contiguous [m, n].
#pragma once

#include <cstdint>

#include "runtime/errors.h"
#include "runtime/tensor.h"
#include "shims/shim_helpers.h"

namespace aotirt {
namespace scaled_mm {

struct Call {
  const char* name = nullptr;
  const Tensor* a = nullptr;  // mat1 [m, k]
  const Tensor* b = nullptr;  // mat2 [k, n]
  const Tensor* scale_a = nullptr;
  const Tensor* scale_b = nullptr;
  const Tensor* bias = nullptr;          // optional
  const Tensor* scale_result = nullptr;  // optional
  int32_t out_dtype = 0;
  bool fast_accum = false;
  int64_t m = 0, n = 0, k = 0;
  Tensor* out = nullptr;  // the caller's (out variant) or `made`
  OwnedTensor made;
};

bool is_float8(int32_t dtype);

// Checks a call on `device_type`; `out` is the out variant's tensor (else
// NULL: the output is made).
aotirt_status prepare(const char* name, int32_t device_type, const Tensor* a, const Tensor* b, const Tensor* scale_a,
                      const Tensor* scale_b, const Tensor* bias, const Tensor* scale_result,
                      const int32_t* out_dtype, int32_t use_fast_accum, Tensor* out, Call* call);

aotirt_status run_cpu(const Call& call);
// Queues the product on the current stream of out's device; no host wait.
aotirt_status run_cuda(const Call& call);

}  // namespace scaled_mm
}  // namespace aotirt
