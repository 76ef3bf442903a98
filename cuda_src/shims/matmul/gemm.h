// The matrix-multiply shims (aoti_torch_{cpu,cuda}_{mm,addmm,bmm,baddbmm}_out,
// addmv, _addmm_activation, _int_mm_out): what the CPU and CUDA
// implementations share.
//
// Every call is first turned into one Problem: three-dimensional views
// [batch, rows, cols] of each operand (mm, addmm, addmv get a batch of one;
// addmv is addmm with a one-column mat2), so that one implementation per
// device serves every shim, with one set of layout rules.
#pragma once

#include <cstdint>

#include "aotirt/aotirt.h"
#include "runtime/tensor.h"

namespace aotirt {
namespace matmul {

struct Problem {
  const char* name = "";  // the shim's name, for messages
  int64_t batch = 0, m = 0, n = 0, k = 0;
  Tensor out;  // [B, M, N], aliasing the caller's out
  Tensor a;    // [B, M, K]
  Tensor b;    // [B, K, N]
  // addmm/baddbmm with beta != 0: out = beta * self + alpha * (a @ b), `self`
  // viewed as [B, M, N] with stride 0 where it broadcasts. Otherwise self is unused.
  bool has_self = false;
  Tensor self;
  double alpha = 1.0, beta = 0.0;
  // `self` is exactly `out` (same elements): beta * self is already in place.
  bool out_is_self = false;
  // `out` shares memory with an input in any other way: the product must be
  // computed elsewhere and copied in, or it would overwrite what it reads.
  bool out_overlaps_input = false;
  // _int_mm: int8 factors, an int32 out, the products summed in int32.
  bool int8 = false;
};

// Checks a call and builds its Problem. `device_type` is the shim's device
// (CPU or CUDA): every operand must be there (and on one CUDA device).
// `self` is null for mm, bmm and _int_mm; `batched` is true for bmm and
// baddbmm (whose self broadcasts to [B, M, N]); `int8` for _int_mm (int8
// factors, int32 out; otherwise every operand has one floating dtype).
aotirt_status prepare(const char* name, int32_t device_type, const Tensor* out, const Tensor* self,
                      const Tensor* mat1, const Tensor* mat2, double beta, double alpha, bool batched,
                      Problem* p, bool int8 = false);

// A new contiguous tensor with `like`'s dtype and shape on `like`'s device;
// CUDA memory is ordered on `stream` (null for the CPU).
aotirt_status empty_like(const Tensor& like, const StreamRef& stream, Tensor* out);

// out <- the product, on the CPU. The Problem's operands are CPU tensors.
aotirt_status run_cpu(const Problem& p);
// out <- the product, queued with cuBLAS on the current stream of out's
// device; `stream` receives that stream (the caller's out now belongs to it).
aotirt_status run_cuda(const Problem& p, StreamRef* stream);

}  // namespace matmul
}  // namespace aotirt
