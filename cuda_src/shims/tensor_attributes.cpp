// The tensor-attribute shims (include/aotirt/shim.h): the dtype, device and
// layout constants generated code asks for while the library is being opened,
// and the getters it reads tensor handles with.

#include "aotirt/shim.h"

#include <string>

#include "runtime/dtypes.h"
#include "runtime/errors.h"
#include "runtime/tensor.h"
#include "shims/shim_helpers.h"

using aotirt::shim;

namespace {

// values[d] (a size or a stride of `tensor`), `d` counted from the end when negative.
AOTITorchError at_dimension(const char* name, const aotirt::Tensor& tensor, int64_t d, const int64_t* values,
                            int64_t* out) {
  return shim(name, [&] {
    if (d < 0) d += tensor.ndim;
    if (d < 0 || d >= tensor.ndim)
      return aotirt::fail(AOTIRT_ERROR_VALUE, std::string(name) + ": dimension out of range");
    *out = values[d];
    return AOTIRT_OK;
  });
}

}  // namespace

extern "C" {

int32_t aoti_torch_device_type_cpu(void) { return AOTIRT_DEVICE_CPU; }
int32_t aoti_torch_device_type_cuda(void) { return AOTIRT_DEVICE_CUDA; }
int32_t aoti_torch_dtype_float8_e5m2(void) { return AOTIRT_DTYPE_FLOAT8_E5M2; }
int32_t aoti_torch_dtype_float8_e4m3fn(void) { return AOTIRT_DTYPE_FLOAT8_E4M3FN; }
int32_t aoti_torch_dtype_bfloat16(void) { return AOTIRT_DTYPE_BFLOAT16; }
int32_t aoti_torch_dtype_float16(void) { return AOTIRT_DTYPE_FLOAT16; }
int32_t aoti_torch_dtype_float32(void) { return AOTIRT_DTYPE_FLOAT32; }
int32_t aoti_torch_dtype_float64(void) { return AOTIRT_DTYPE_FLOAT64; }
int32_t aoti_torch_dtype_uint8(void) { return AOTIRT_DTYPE_UINT8; }
int32_t aoti_torch_dtype_int8(void) { return AOTIRT_DTYPE_INT8; }
int32_t aoti_torch_dtype_int16(void) { return AOTIRT_DTYPE_INT16; }
int32_t aoti_torch_dtype_int32(void) { return AOTIRT_DTYPE_INT32; }
int32_t aoti_torch_dtype_int64(void) { return AOTIRT_DTYPE_INT64; }
int32_t aoti_torch_dtype_bool(void) { return AOTIRT_DTYPE_BOOL; }
size_t aoti_torch_dtype_element_size(int32_t dtype) { return aotirt::dtype_itemsize(dtype); }
int32_t aoti_torch_layout_strided(void) { return 0; }
int32_t aoti_torch_memory_format_contiguous_format(void) { return 0; }

// The field getters: generated code calls them on every run, so each is one
// read of the tensor, with no checks (the handle is the model's own).
#define AOTIRT_TENSOR_GETTER(name, type, value)                                                                        \
  AOTITorchError name(AtenTensorHandle tensor, type* ret) {                                                            \
    *ret = (value);                                                                                                    \
    return AOTI_TORCH_SUCCESS;                                                                                         \
  }
AOTIRT_TENSOR_GETTER(aoti_torch_get_data_ptr, void*, tensor->data())
AOTIRT_TENSOR_GETTER(aoti_torch_get_storage_size, int64_t, static_cast<int64_t>(tensor->storage->nbytes))
AOTIRT_TENSOR_GETTER(aoti_torch_get_dim, int64_t, tensor->ndim)
AOTIRT_TENSOR_GETTER(aoti_torch_get_numel, int64_t, tensor->numel())
AOTIRT_TENSOR_GETTER(aoti_torch_get_sizes, int64_t*, tensor->sizes)
AOTIRT_TENSOR_GETTER(aoti_torch_get_strides, int64_t*, tensor->strides)
AOTIRT_TENSOR_GETTER(aoti_torch_get_dtype, int32_t, tensor->dtype)
AOTIRT_TENSOR_GETTER(aoti_torch_get_device_type, int32_t, tensor->storage->device_type)
// torch reports -1 as the index of the CPU.
AOTIRT_TENSOR_GETTER(aoti_torch_get_device_index, int32_t,
                     tensor->storage->device_type == AOTIRT_DEVICE_CPU ? -1 : tensor->storage->device_index)
AOTIRT_TENSOR_GETTER(aoti_torch_get_storage_offset, int64_t, tensor->storage_offset)
AOTIRT_TENSOR_GETTER(aoti_torch_is_contiguous, bool, tensor->is_contiguous())
#undef AOTIRT_TENSOR_GETTER

AOTITorchError aoti_torch_get_size(AtenTensorHandle tensor, int64_t d, int64_t* ret_size) {
  return at_dimension("aoti_torch_get_size", *tensor, d, tensor->sizes, ret_size);
}

AOTITorchError aoti_torch_get_stride(AtenTensorHandle tensor, int64_t d, int64_t* ret_stride) {
  return at_dimension("aoti_torch_get_stride", *tensor, d, tensor->strides, ret_stride);
}

}  // extern "C"
