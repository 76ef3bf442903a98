// aoti_torch_{cpu,cuda}_{sort,sort_stable,topk} (include/aotirt/shim.h,
// torch's c_shim_cpu.h / c_shim_cuda.h signatures): checked here, with the
// outputs laid out as torch's meta functions lay them out
// (torch/_meta_registrations.py: meta_sort is empty_like(self) for the
// values and the int64 indices; topk_meta is new_empty of self's sizes with
// dim's replaced by k, i.e. contiguous), then sorted on the CPU or on CUDA.

#include <string>

#include "aotirt/shim.h"
#include "runtime/dtypes.h"
#include "runtime/errors.h"
#include "runtime/tensor.h"
#include "shims/empty_like.h"
#include "shims/shim_helpers.h"
#include "shims/sort/sort.h"

namespace aotirt {
namespace sort {

namespace {

aotirt_status require_device(const char* name, const Tensor& self, int32_t device_type) {
  if (self.storage && self.storage->device_type == device_type) return AOTIRT_OK;
  return fail(AOTIRT_ERROR_VALUE, std::string(name) + ": self must be a " +
                                      (device_type == AOTIRT_DEVICE_CPU ? "CPU" : "CUDA") + " tensor");
}

}  // namespace

aotirt_status prepare(const char* name, int32_t device_type, const Tensor* self, int64_t dim, int64_t k,
                      bool descending, Call* call) {
  if (!self) return null_argument(name);
  AOTIRT_TRY(require_device(name, *self, device_type));
  if (dtype_itemsize(self->dtype) == 0)
    return fail(AOTIRT_ERROR_TYPE, std::string(name) + ": dtype code " + std::to_string(self->dtype) +
                                       " is not supported");
  // torch's maybe_wrap_dim, and its message: a 0-d tensor takes dim 0 or -1.
  const int64_t rank = self->ndim ? self->ndim : 1;
  if (dim < -rank || dim >= rank)
    return fail(AOTIRT_ERROR_VALUE, std::string(name) + ": Dimension out of range (expected to be in range of [" +
                                        std::to_string(-rank) + ", " + std::to_string(rank - 1) + "], but got " +
                                        std::to_string(dim) + ")");
  if (dim < 0) dim += rank;
  const int64_t n = self->ndim ? self->sizes[dim] : 1;
  const bool topk = k >= 0;
  if (topk && k > n)
    return fail(AOTIRT_ERROR_VALUE, std::string(name) + ": selected index k out of range (k = " + std::to_string(k) +
                                        ", dimension " + std::to_string(dim) + " has " + std::to_string(n) +
                                        " elements)");
  call->name = name;
  call->device_type = device_type;
  call->self = self;
  call->dim = dim;
  call->n = n;
  // A 0-d tensor's outputs are 0-d, one element, whatever k (torch copies
  // the value and writes index 0 for k = 0 too).
  call->k = topk && self->ndim ? k : n;
  call->descending = descending;

  const int32_t device_index = self->storage->device_index;
  int64_t sizes[AOTIRT_MAX_DIMS], strides[AOTIRT_MAX_DIMS];
  for (int64_t d = 0; d < self->ndim; ++d) sizes[d] = self->sizes[d];
  const int64_t* layout = nullptr;  // contiguous
  if (topk) {
    if (self->ndim) sizes[dim] = call->k;
  } else {
    empty_like_strides(*self, strides);
    layout = strides;
  }
  Tensor* made = nullptr;
  AOTIRT_TRY(new_tensor(self->ndim, sizes, layout, self->dtype, device_type, device_index, &made));
  call->values.reset(made);
  AOTIRT_TRY(new_tensor(self->ndim, sizes, layout, AOTIRT_DTYPE_INT64, device_type, device_index, &made));
  call->indices.reset(made);
  return AOTIRT_OK;
}

aotirt_status finish(Call* call, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  *ret0 = call->values.release();
  *ret1 = call->indices.release();
  return AOTIRT_OK;
}

namespace {

// k < 0 marks a sort (every element along dim, self's layout).
constexpr int64_t kSort = -1;

aotirt_status run(const char* name, int32_t device_type, const Tensor* self, int64_t dim, int64_t k,
                  bool descending, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  if (!ret0 || !ret1) return null_argument(name);
  Call call;
  AOTIRT_TRY(prepare(name, device_type, self, dim, k, descending, &call));
  AOTIRT_TRY(device_type == AOTIRT_DEVICE_CPU ? run_cpu(call) : run_cuda(call));
  return finish(&call, ret0, ret1);
}

aotirt_status topk(const char* name, int32_t device_type, const Tensor* self, int64_t k, int64_t dim,
                   int32_t largest, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  if (k < 0)
    return fail(AOTIRT_ERROR_VALUE, std::string(name) + ": selected index k out of range (k = " + std::to_string(k) +
                                        " is negative)");
  return run(name, device_type, self, dim, k, largest != 0, ret0, ret1);
}

}  // namespace
}  // namespace sort
}  // namespace aotirt

using aotirt::sort::kSort;

// One set of shims per device, each named in full (the name errors carry).
// `sorted` is ignored: the k values always come back in order, which torch's
// sorted=False allows. Every sort is stable (sort.h), so `stable` (NULL: not
// asked) changes nothing.
#define AOTIRT_SORT_SHIMS(topk_shim, sort_shim, sort_stable_shim, DEVICE_TYPE)                                         \
  AOTITorchError topk_shim(AtenTensorHandle self, int64_t k, int64_t dim, int32_t largest, int32_t sorted,             \
                      AtenTensorHandle* ret0, AtenTensorHandle* ret1) {                                                \
    const char* name = #topk_shim;                                                                                     \
    (void)sorted;                                                                                                      \
    return aotirt::shim(name, [&] {                                                                                    \
      return aotirt::sort::topk(name, DEVICE_TYPE, self, k, dim, largest, ret0, ret1);                                 \
    });                                                                                                                \
  }                                                                                                                    \
  AOTITorchError sort_shim(AtenTensorHandle self, int64_t dim, int32_t descending, AtenTensorHandle* ret0,             \
                      AtenTensorHandle* ret1) {                                                                        \
    const char* name = #sort_shim;                                                                                     \
    return aotirt::shim(name, [&] {                                                                                    \
      return aotirt::sort::run(name, DEVICE_TYPE, self, dim, kSort, descending != 0, ret0, ret1);                      \
    });                                                                                                                \
  }                                                                                                                    \
  AOTITorchError sort_stable_shim(AtenTensorHandle self, int32_t* stable, int64_t dim, int32_t descending,             \
                             AtenTensorHandle* ret0, AtenTensorHandle* ret1) {                                         \
    const char* name = #sort_stable_shim;                                                                              \
    (void)stable;                                                                                                      \
    return aotirt::shim(name, [&] {                                                                                    \
      return aotirt::sort::run(name, DEVICE_TYPE, self, dim, kSort, descending != 0, ret0, ret1);                      \
    });                                                                                                                \
  }

extern "C" {

AOTIRT_SORT_SHIMS(aoti_torch_cpu_topk, aoti_torch_cpu_sort, aoti_torch_cpu_sort_stable, AOTIRT_DEVICE_CPU)
AOTIRT_SORT_SHIMS(aoti_torch_cuda_topk, aoti_torch_cuda_sort, aoti_torch_cuda_sort_stable, AOTIRT_DEVICE_CUDA)

}  // extern "C"
