// The aoti_torch_* functions that model libraries call (see include/aotirt/shim.h).
//
// Each returns AOTI_TORCH_FAILURE after recording the reason as the thread's
// last aotirt error; the handle that ran the model reports that reason.

#include "aotirt/shim.h"

#include <cstdio>
#include <new>
#include <stdexcept>
#include <string>

#include "copy.h"
#include "errors.h"
#include "shim_helpers.h"
#include "stream.h"
#include "tensor.h"

using aotirt::Storage;
using aotirt::StorageRef;
using aotirt::Stream;
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
  aotirt_status status = aotirt::copy_between(*copy, self);
  if (status != AOTIRT_OK) {
    delete copy;
    return status;
  }
  *out = copy;
  return AOTIRT_OK;
}

struct StreamGuard {
  Stream* previous_stream = nullptr;
  StreamRef stream;  // keeps an adopted stream alive while it is current
  aotirt::DeviceGuard device;
};

thread_local bool grad_mode_enabled = false;

// Keeps the last stream handed out by aoti_torch_get_current_cuda_stream
// alive: the caller receives a raw cudaStream_t and holds no reference.
thread_local StreamRef last_stream_handed_out;

}  // namespace

// Declared in shim_helpers.h: the other shim files make their outputs with it.
aotirt_status aotirt::new_tensor(int64_t ndim, const int64_t* sizes, const int64_t* strides, int32_t dtype,
                                 int32_t device_type, int32_t device_index, Tensor** out) {
  AOTIRT_TRY(check_device_type(device_type));
  AOTIRT_TRY(aotirt::check_shape(ndim, sizes));
  size_t itemsize = aotirt::dtype_itemsize(dtype);
  if (itemsize == 0)
    return aotirt::fail(AOTIRT_ERROR_TYPE, "dtype code " + std::to_string(dtype) + " is not supported");
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

int32_t aoti_torch_device_type_cpu(void) { return AOTIRT_DEVICE_CPU; }
int32_t aoti_torch_device_type_cuda(void) { return AOTIRT_DEVICE_CUDA; }
int32_t aoti_torch_dtype_float8_e5m2(void) { return 23; }
int32_t aoti_torch_dtype_float8_e4m3fn(void) { return 24; }
int32_t aoti_torch_dtype_bfloat16(void) { return 15; }
int32_t aoti_torch_dtype_float16(void) { return 5; }
int32_t aoti_torch_dtype_float32(void) { return 6; }
int32_t aoti_torch_dtype_float64(void) { return 7; }
int32_t aoti_torch_dtype_uint8(void) { return 0; }
int32_t aoti_torch_dtype_int8(void) { return 1; }
int32_t aoti_torch_dtype_int16(void) { return 2; }
int32_t aoti_torch_dtype_int32(void) { return 3; }
int32_t aoti_torch_dtype_int64(void) { return 4; }
int32_t aoti_torch_dtype_bool(void) { return 11; }
size_t aoti_torch_dtype_element_size(int32_t dtype) { return aotirt::dtype_itemsize(dtype); }
int32_t aoti_torch_layout_strided(void) { return 0; }
int32_t aoti_torch_memory_format_contiguous_format(void) { return 0; }

// Inference never records autograd history; the flag only has to round-trip.
bool aoti_torch_grad_mode_is_enabled(void) { return grad_mode_enabled; }
void aoti_torch_grad_mode_set_enabled(bool enabled) { grad_mode_enabled = enabled; }

AOTITorchError aoti_torch_delete_tensor_object(AtenTensorHandle tensor) {
  if (aotirt::input_aliases_in_flight()) aotirt::forget_input_alias(tensor);  // a model took its input
  delete tensor;
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_get_data_ptr(AtenTensorHandle tensor, void** ret_data_ptr) {
  *ret_data_ptr = tensor->data();
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_get_storage_size(AtenTensorHandle tensor, int64_t* ret_size) {
  *ret_size = static_cast<int64_t>(tensor->storage->nbytes);
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_get_dim(AtenTensorHandle tensor, int64_t* ret_dim) {
  *ret_dim = tensor->ndim;
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_get_numel(AtenTensorHandle tensor, int64_t* ret_numel) {
  *ret_numel = tensor->numel();
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_get_sizes(AtenTensorHandle tensor, int64_t** ret_sizes) {
  *ret_sizes = tensor->sizes;
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_get_size(AtenTensorHandle tensor, int64_t d, int64_t* ret_size) {
  return shim("aoti_torch_get_size", [&] {
    if (d < 0) d += tensor->ndim;
    if (d < 0 || d >= tensor->ndim)
      return aotirt::fail(AOTIRT_ERROR_VALUE, "aoti_torch_get_size: dimension out of range");
    *ret_size = tensor->sizes[d];
    return AOTIRT_OK;
  });
}

AOTITorchError aoti_torch_get_strides(AtenTensorHandle tensor, int64_t** ret_strides) {
  *ret_strides = tensor->strides;
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_get_stride(AtenTensorHandle tensor, int64_t d, int64_t* ret_stride) {
  return shim("aoti_torch_get_stride", [&] {
    if (d < 0) d += tensor->ndim;
    if (d < 0 || d >= tensor->ndim)
      return aotirt::fail(AOTIRT_ERROR_VALUE, "aoti_torch_get_stride: dimension out of range");
    *ret_stride = tensor->strides[d];
    return AOTIRT_OK;
  });
}

AOTITorchError aoti_torch_get_dtype(AtenTensorHandle tensor, int32_t* ret_dtype) {
  *ret_dtype = tensor->dtype;
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_get_device_type(AtenTensorHandle tensor, int32_t* ret_device_type) {
  *ret_device_type = tensor->storage->device_type;
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_get_device_index(AtenTensorHandle tensor, int32_t* ret_device_index) {
  *ret_device_index = tensor->storage->device_type == AOTIRT_DEVICE_CPU ? -1 : tensor->storage->device_index;
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_get_storage_offset(AtenTensorHandle tensor, int64_t* ret_storage_offset) {
  *ret_storage_offset = tensor->storage_offset;
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_is_contiguous(AtenTensorHandle tensor, bool* ret_is_contiguous) {
  *ret_is_contiguous = tensor->is_contiguous();
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
  return shim("aoti_torch_copy_", [&] { return aotirt::copy_between(*self, *src); });
}

AOTITorchError aoti_torch_create_cuda_stream_guard(void* stream, int32_t device_index,
                                                   CUDAStreamGuardHandle* ret_guard) {
  return shim("aoti_torch_create_cuda_stream_guard", [&] {
    auto* guard = new (std::nothrow) StreamGuard();
    if (!guard) return aotirt::fail(AOTIRT_ERROR_MEMORY, "out of host memory");
    aotirt_status status = guard->device.enter(device_index);
    if (status != AOTIRT_OK) {
      delete guard;
      return status;
    }
    guard->previous_stream = aotirt::current_stream();
    Stream* current = guard->previous_stream;
    if (current && current->handle == static_cast<cudaStream_t>(stream) && current->device == device_index) {
      guard->stream = StreamRef::share(current);  // the usual case: the stream the handle passed in
    } else {
      guard->stream = aotirt::adopt_stream(static_cast<cudaStream_t>(stream), device_index);
    }
    aotirt::set_current_stream(guard->stream.get());
    *ret_guard = reinterpret_cast<CUDAStreamGuardHandle>(guard);
    return AOTIRT_OK;
  });
}

AOTITorchError aoti_torch_delete_cuda_stream_guard(CUDAStreamGuardHandle guard) {
  auto* g = reinterpret_cast<StreamGuard*>(guard);
  aotirt::set_current_stream(g->previous_stream);
  delete g;
  return AOTI_TORCH_SUCCESS;
}

AOTITorchError aoti_torch_get_current_cuda_stream(int32_t device_index, void** ret_stream) {
  return shim("aoti_torch_get_current_cuda_stream", [&] {
    StreamRef stream;
    AOTIRT_TRY(aotirt::stream_for_device(device_index, &stream));
    *ret_stream = stream->handle;
    last_stream_handed_out = std::move(stream);
    return AOTIRT_OK;
  });
}

void aoti_torch_warn(const char* func, const char* file, uint32_t line, const char* msg) {
  std::fprintf(stderr, "aotirt: warning from model code (%s at %s:%u): %s\n", func ? func : "?",
               file ? file : "?", line, msg ? msg : "");
}

void aoti_torch_check(bool cond, const char* func, const char* file, uint32_t line, const char* msg) {
  if (cond) return;
  std::string message = std::string(msg ? msg : "check failed") + " (" + (func ? func : "?") + " at " +
                        (file ? file : "?") + ":" + std::to_string(line) + ")";
  aotirt::fail(AOTIRT_ERROR_AOTI, message);
  // torch's aoti_torch_check throws too: generated code relies on not
  // continuing past a failed check, and catches at its run entry point.
  throw std::runtime_error(message);
}

}  // extern "C"
