// aten.sort / aten.sort.stable / aten.topk, shared by the CPU loop and the
// CUDA sorts (sort_paths.h): one checked call (`prepare`), its outputs
// already made with the layout torch's meta functions give them, then the
// device's run.
//
// Order, on both devices, is torch's: NaN is larger than every number (all
// NaNs equal), -0.0 equals 0.0, and equal keys keep their input order
// (descending too), so every call is a stable sort and topk returns the
// first k of that order (the CUDA top-k selection keeps exactly those,
// sort_tiles.cu). torch allows any order of ties for sort(stable=
// False) and topk, and any order of the k values for topk(sorted=False);
// aotirt always returns this one, on the CPU and on CUDA alike.
#pragma once

#include <cstdint>

#include "runtime/errors.h"
#include "runtime/tensor.h"
#include "shims/shim_helpers.h"

namespace aotirt {
namespace sort {

struct Call {
  const char* name = nullptr;
  int32_t device_type = AOTIRT_DEVICE_CPU;
  const Tensor* self = nullptr;
  int64_t dim = 0;         // wrapped: 0 <= dim < max(ndim, 1)
  int64_t n = 1;           // elements along dim (1 for a 0-d tensor)
  int64_t k = 1;           // outputs along dim: n for sort
  bool descending = false; // sort's descending, topk's largest
  OwnedTensor values, indices;
};

// Checks a sort (k < 0) or topk call: the device, the dtype, dim in
// [-ndim, ndim) ([-1, 0] for a 0-d tensor), 0 <= k <= n; makes the outputs
// (sort: empty_like(self); topk: contiguous, dim of size k, as torch's
// topk_meta) on self's device, ordered on the current stream for CUDA.
aotirt_status prepare(const char* name, int32_t device_type, const Tensor* self, int64_t dim, int64_t k,
                      bool descending, Call* call);

aotirt_status run_cpu(const Call& call);
// Queues the sort on the current stream of self's device; no host wait.
aotirt_status run_cuda(const Call& call);

// Hands the outputs to the caller's return slots.
aotirt_status finish(Call* call, AtenTensorHandle* ret0, AtenTensorHandle* ret1);

}  // namespace sort
}  // namespace aotirt
