// cumsum::prepare (cumsum.h): the checks and the output both devices share.

#include <string>

#include "runtime/dtypes.h"
#include "shims/scan/cumsum.h"

namespace aotirt {
namespace cumsum {

aotirt_status prepare(const char* name, int32_t device_type, const Tensor* self, int64_t dim, const int32_t* dtype,
                      Call* call) {
  if (!self || !call) return null_argument(name);
  if (!self->storage || self->storage->device_type != device_type)
    return fail(AOTIRT_ERROR_VALUE, std::string(name) + ": self is not a " +
                                        (device_type == AOTIRT_DEVICE_CPU ? "CPU" : "CUDA") + " tensor");
  const int64_t rank = self->ndim ? self->ndim : 1;  // a 0-d tensor takes dim 0 or -1
  if (dim < -rank || dim >= rank)
    return fail(AOTIRT_ERROR_VALUE, std::string(name) + ": dim " + std::to_string(dim) + " is out of range for " +
                                        std::to_string(self->ndim) + " dimensions");
  if (dim < 0) dim += rank;
  const int32_t out_dtype = dtype ? *dtype : (is_floating(self->dtype) ? self->dtype : AOTIRT_DTYPE_INT64);
  if (out_dtype == AOTIRT_DTYPE_BOOL)
    return fail(AOTIRT_ERROR_TYPE, std::string(name) + ": a bool result is not supported (torch has no bool "
                                                       "cumsum either)");
  if (dtype_itemsize(out_dtype) == 0 || dtype_itemsize(self->dtype) == 0)
    return fail(AOTIRT_ERROR_TYPE, std::string(name) + ": dtype code " + std::to_string(out_dtype) +
                                       " is not supported");
  Tensor* made = nullptr;
  AOTIRT_TRY(new_tensor(self->ndim, self->sizes, nullptr, out_dtype, device_type, self->storage->device_index, &made));
  call->out.reset(made);
  call->name = name;
  call->self = self;
  call->dim = dim;
  call->length = self->ndim ? self->sizes[dim] : 1;
  call->out_dtype = out_dtype;
  return AOTIRT_OK;
}

}  // namespace cumsum
}  // namespace aotirt
