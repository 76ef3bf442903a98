// The memory shims (include/aotirt/shim.h): tensor handles made, aliased and
// deleted, storage allocated or wrapped, clones and copies.
//
// Like every shim, each returns AOTI_TORCH_FAILURE after recording the reason
// as the thread's last aotirt error; the handle that ran the model reports
// that reason.

#include "aotirt/shim.h"

#include <new>
#include <string>

#include "runtime/copy.h"
#include "runtime/dtypes.h"
#include "runtime/errors.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"
#include "shims/shim_helpers.h"

using aotirt::Storage;
using aotirt::StorageRef;
using aotirt::StreamRef;
using aotirt::Tensor;
using aotirt::new_tensor;
using aotirt::null_argument;
using aotirt::shim;

namespace {

aotirt_status check_device_type(int32_t device_type) {
  if (device_type == AOTIRT_DEVICE_CPU || device_type == AOTIRT_DEVICE_CUDA) return AOTIRT_OK;
  return aotirt::fail(AOTIRT_ERROR_VALUE,
                      "device type " + std::to_string(device_type) + " is not supported (cpu 0, cuda 1)");
}

aotirt_status wrap_blob(void* data, int64_t ndim, const int64_t* sizes, const int64_t* strides,
                        int64_t storage_offset, int32_t dtype, int32_t device_type, int32_t device_index,
                        Tensor** out) {
  AOTIRT_TRY(check_device_type(device_type));
  auto storage = StorageRef::adopt(new (std::nothrow) Storage());
  if (!storage) return aotirt::fail(AOTIRT_ERROR_MEMORY, "out of host memory");
  storage->data = data;
  storage->device_type = device_type;
  storage->device_index = device_index;
  storage->owner = Storage::Owner::Borrowed;  // the model owns the blob
  StreamRef stream;
  if (device_type == AOTIRT_DEVICE_CUDA) AOTIRT_TRY(aotirt::stream_for_device(device_index, &stream));
  AOTIRT_TRY(aotirt::make_tensor(storage, ndim, sizes, strides, storage_offset, dtype, stream, out));
  storage->nbytes = (*out)->extent_bytes() + storage_offset * (*out)->itemsize();
  return AOTIRT_OK;
}

aotirt_status clone(const Tensor& self, bool preserve_strides, Tensor** out) {
  const int64_t* strides = preserve_strides ? self.strides : nullptr;
  if (preserve_strides)
    for (int64_t d = 0; d < self.ndim; ++d)
      if (self.strides[d] < 0) strides = nullptr;  // no such layout to preserve: fall back to contiguous
  Tensor* copy = nullptr;
  AOTIRT_TRY(new_tensor(self.ndim, self.sizes, strides, self.dtype, self.storage->device_type,
                        self.storage->device_index, &copy));
  aotirt_status status = aotirt::copy_between(*copy, self, aotirt::current_stream());
  if (status != AOTIRT_OK) {
    delete copy;
    return status;
  }
  *out = copy;
  return AOTIRT_OK;
}

}  // namespace

// Declared in shim_helpers.h: the other shim files make their outputs with it.
aotirt_status aotirt::new_tensor(int64_t ndim, const int64_t* sizes, const int64_t* strides, int32_t dtype,
                                 int32_t device_type, int32_t device_index, Tensor** out) {
  AOTIRT_TRY(check_device_type(device_type));
  AOTIRT_TRY(aotirt::check_shape(ndim, sizes));
  AOTIRT_TRY(aotirt::check_dtype(dtype));
  Tensor view;  // only to measure the extent of the requested strides
  view.ndim = ndim;
  view.dtype = dtype;
  for (int64_t d = 0; d < ndim; ++d) {
    view.sizes[d] = sizes[d];
    if (strides && strides[d] < 0)
      return aotirt::fail(AOTIRT_ERROR_VALUE, "empty_strided: negative strides are not supported");
  }
  if (strides)
    for (int64_t d = 0; d < ndim; ++d) view.strides[d] = strides[d];
  else
    aotirt::contiguous_strides(ndim, sizes, view.strides);

  size_t nbytes = 0;
  if (!view.extent_bytes_checked(&nbytes))
    return aotirt::fail(AOTIRT_ERROR_VALUE, "empty_strided: the sizes and strides span more bytes than fit in int64");
  StreamRef stream;
  if (device_type == AOTIRT_DEVICE_CUDA) AOTIRT_TRY(aotirt::stream_for_device(device_index, &stream));
  StorageRef storage;
  AOTIRT_TRY(aotirt::allocate_storage(nbytes, device_type, device_index, stream, &storage));
  return aotirt::make_tensor(std::move(storage), ndim, sizes, view.strides, 0, dtype, std::move(stream), out);
}

extern "C" {

AOTITorchError aoti_torch_delete_tensor_object(AtenTensorHandle tensor) {
  if (aotirt::input_aliases_in_flight()) aotirt::forget_input_alias(tensor);  // a model took its input
  delete tensor;
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_new_tensor_handle(AtenTensorHandle orig_handle, AtenTensorHandle* new_handle) {
  return shim("aoti_torch_new_tensor_handle", [&] {
    Tensor* t = aotirt::alias(*orig_handle);
    if (!t) return aotirt::fail(AOTIRT_ERROR_MEMORY, "out of host memory");
    *new_handle = t;
    return AOTIRT_OK;
  });
}

AOTITorchError aoti_torch_empty_strided(int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr,
                                        int32_t dtype, int32_t device_type, int32_t device_index,
                                        AtenTensorHandle* ret_new_tensor) {
  return shim("aoti_torch_empty_strided", [&] {
    if (ndim > 0 && !sizes_ptr) return null_argument("aoti_torch_empty_strided");
    return new_tensor(ndim, sizes_ptr, strides_ptr, dtype, device_type, device_index, ret_new_tensor);
  });
}

AOTITorchError aoti_torch_create_tensor_from_blob(void* data, int64_t ndim, const int64_t* sizes_ptr,
                                                  const int64_t* strides_ptr, int64_t storage_offset,
                                                  int32_t dtype, int32_t device_type, int32_t device_index,
                                                  AtenTensorHandle* ret) {
  return shim("aoti_torch_create_tensor_from_blob", [&] {
    if (ndim > 0 && (!sizes_ptr || !strides_ptr)) return null_argument("aoti_torch_create_tensor_from_blob");
    return wrap_blob(data, ndim, sizes_ptr, strides_ptr, storage_offset, dtype, device_type, device_index, ret);
  });
}

AOTITorchError aoti_torch_create_tensor_from_blob_v2(void* data, int64_t ndim, const int64_t* sizes_ptr,
                                                     const int64_t* strides_ptr, int64_t storage_offset,
                                                     int32_t dtype, int32_t device_type, int32_t device_index,
                                                     AtenTensorHandle* ret, int32_t layout,
                                                     const uint8_t* opaque_metadata,
                                                     int64_t opaque_metadata_size) {
  (void)opaque_metadata;
  (void)opaque_metadata_size;
  return shim("aoti_torch_create_tensor_from_blob_v2", [&] {
    if (layout != 0)
      return aotirt::fail(AOTIRT_ERROR_VALUE, "aoti_torch_create_tensor_from_blob_v2: only the strided layout is supported");
    if (ndim > 0 && (!sizes_ptr || !strides_ptr)) return null_argument("aoti_torch_create_tensor_from_blob_v2");
    return wrap_blob(data, ndim, sizes_ptr, strides_ptr, storage_offset, dtype, device_type, device_index, ret);
  });
}

AOTITorchError aoti_torch__reinterpret_tensor(AtenTensorHandle self, int64_t ndim, const int64_t* sizes_ptr,
                                              const int64_t* strides_ptr, int64_t storage_offset,
                                              AtenTensorHandle* ret_new_tensor) {
  return shim("aoti_torch__reinterpret_tensor", [&] {
    if (ndim > 0 && (!sizes_ptr || !strides_ptr)) return null_argument("aoti_torch__reinterpret_tensor");
    // torch's _reinterpret_tensor takes an offset increment, not an absolute offset.
    return aotirt::make_tensor(self->storage, ndim, sizes_ptr, strides_ptr,
                               self->storage_offset + storage_offset, self->dtype, self->stream,
                               ret_new_tensor);
  });
}

AOTITorchError aoti_torch_clone(AtenTensorHandle self, AtenTensorHandle* ret) {
  return shim("aoti_torch_clone", [&] { return clone(*self, false, ret); });
}

AOTITorchError aoti_torch_clone_preserve_strides(AtenTensorHandle self, AtenTensorHandle* ret) {
  return shim("aoti_torch_clone_preserve_strides", [&] { return clone(*self, true, ret); });
}

AOTITorchError aoti_torch_copy_(AtenTensorHandle self, AtenTensorHandle src, int32_t non_blocking) {
  (void)non_blocking;  // every device-side copy is already non-blocking
  return shim("aoti_torch_copy_", [&] { return aotirt::copy_between(*self, *src, aotirt::current_stream()); });
}

}  // extern "C"
