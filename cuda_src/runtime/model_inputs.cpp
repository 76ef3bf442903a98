#include "runtime/model_inputs.h"

#include <string>
#include <utility>

#include "runtime/copy.h"
#include "runtime/errors.h"
#include "runtime/transfer.h"

namespace aotirt {
namespace {

// What a model gets for an input that wraps read-only memory: a private,
// contiguous copy (on `on`, already ordered after the input's producer), never
// the memory itself. AOTInductor writes in place into the inputs an exported
// program mutates (x.add_(1) compiles to a kernel that stores through the
// input's pointer), and nothing a library exports says which inputs those are.
aotirt_status private_copy(const Tensor& input, Stream* on, Tensor** out) {
  const Storage& source = *input.storage;
  StreamRef stream = on ? StreamRef::share(on) : StreamRef();
  StorageRef storage;
  AOTIRT_TRY(allocate_storage(static_cast<size_t>(input.numel()) * input.itemsize(), source.device_type,
                              source.device_index, stream, &storage));
  Tensor* copy = nullptr;
  AOTIRT_TRY(make_tensor(std::move(storage), input.ndim, input.sizes, nullptr, 0, input.dtype, stream, &copy));
  aotirt_status status = AOTIRT_OK;
  if (source.device_type == AOTIRT_DEVICE_CPU)
    copy_host_to_host(*copy, input);
  else
    status = copy_device_to_device(*copy, input, on);
  if (status != AOTIRT_OK) {
    delete copy;
    return status;
  }
  *out = copy;
  return AOTIRT_OK;
}

std::string where(int32_t type, int32_t index) {
  return type == AOTIRT_DEVICE_CPU ? std::string("cpu") : "cuda:" + std::to_string(index);
}

}  // namespace

aotirt_status model_input(const Tensor& input, size_t i, int32_t device_type, int32_t device_index, Stream* on,
                          Tensor** out) {
  const Storage& storage = *input.storage;
  if (storage.device_type != device_type)
    return fail(AOTIRT_ERROR_VALUE, "input " + std::to_string(i) + " is on " +
                                        where(storage.device_type, storage.device_index) + ", the model runs on " +
                                        where(device_type, device_index));
  // Another GPU's tensor: moved by a peer copy on the run's stream, after its
  // producer (no host wait). The copy is the model's own, read-only or not.
  if (device_type == AOTIRT_DEVICE_CUDA && storage.device_index != device_index)
    return copy_to_device(input, device_index, on, out);
  if (on) AOTIRT_TRY(use_on(input, on));  // a CUDA run: after the input's producer
  if (storage.read_only) return private_copy(input, on, out);
  *out = alias(input);
  return *out ? AOTIRT_OK : fail(AOTIRT_ERROR_MEMORY, "out of host memory");
}

}  // namespace aotirt
