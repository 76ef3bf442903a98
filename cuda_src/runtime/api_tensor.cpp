// The C API of include/aotirt/aotirt.h: dtypes, tensors, copies and the copy
// routine. Argument checks and conversions only; the work is done in
// tensor.cpp, copy.cu and transfer.cpp.

#include <new>
#include <string>

#include "runtime/copy.h"
#include "runtime/dtypes.h"
#include "runtime/entry.h"
#include "runtime/errors.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"
#include "runtime/transfer.h"

using namespace aotirt;

namespace {

// Bytes of a contiguous tensor (the shape is checked already); fails when
// they do not fit in int64, as sizes from users may ask for.
aotirt_status contiguous_nbytes(int64_t ndim, const int64_t* sizes, int32_t dtype, size_t* out) {
  int64_t n = static_cast<int64_t>(dtype_itemsize(dtype));
  for (int64_t d = 0; d < ndim; ++d)
    if (__builtin_mul_overflow(n, sizes[d], &n))
      return fail(AOTIRT_ERROR_VALUE, "the tensor would hold more bytes than fit in int64");
  *out = static_cast<size_t>(n);
  return AOTIRT_OK;
}

}  // namespace

extern "C" {

AOTIRT_API size_t aotirt_dtype_count(void) { return kNumDtypes; }
AOTIRT_API int32_t aotirt_dtype_code(size_t i) { return i < kNumDtypes ? kDtypes[i].code : -1; }
AOTIRT_API size_t aotirt_dtype_itemsize(int32_t dtype) { return dtype_itemsize(dtype); }
AOTIRT_API int aotirt_dtype_kind(int32_t dtype) { return dtype_kind(dtype); }

AOTIRT_API const char* aotirt_dtype_name(int32_t dtype) {
  const DtypeInfo* d = dtype_info(dtype);
  return d ? d->name : nullptr;
}

AOTIRT_API aotirt_status aotirt_tensor_empty(int64_t ndim, const int64_t* sizes, int32_t dtype,
                                             int32_t device_type, int32_t device_index, aotirt_stream* stream,
                                             aotirt_tensor** out) {
  AOTIRT_ENTRY();
  AOTIRT_TRY(check_shape(ndim, sizes));
  AOTIRT_TRY(check_dtype(dtype));
  StreamRef owner;
  if (device_type == AOTIRT_DEVICE_CUDA) AOTIRT_TRY(stream_or_shared(stream, device_index, &owner));
  size_t nbytes = 0;
  AOTIRT_TRY(contiguous_nbytes(ndim, sizes, dtype, &nbytes));
  StorageRef storage;
  AOTIRT_TRY(allocate_storage(nbytes, device_type, device_index, owner, &storage));
  return make_tensor(std::move(storage), ndim, sizes, nullptr, 0, dtype, std::move(owner), out);
}

AOTIRT_API aotirt_status aotirt_tensor_wrap_host(void* data, int64_t ndim, const int64_t* sizes,
                                                 const int64_t* strides, int32_t dtype, void (*release)(void*),
                                                 void* release_ctx, aotirt_tensor** out) {
  AOTIRT_ENTRY();
  AOTIRT_TRY(check_dtype(dtype));
  if (strides)
    for (int64_t d = 0; d < ndim && d < AOTIRT_MAX_DIMS; ++d)
      if (strides[d] < 0)
        return fail(AOTIRT_ERROR_VALUE, "stride " + std::to_string(strides[d]) + " of dimension " + std::to_string(d) +
                                            " is negative: aotirt tensors take non-negative strides");
  auto storage = StorageRef::adopt(new (std::nothrow) Storage());
  if (!storage) return fail(AOTIRT_ERROR_MEMORY, "out of host memory");
  storage->data = data;
  storage->owner = Storage::Owner::Borrowed;
  AOTIRT_TRY(make_tensor(storage, ndim, sizes, strides, 0, dtype, StreamRef(), out));
  // Only now does the storage own the release: on failure the caller keeps it.
  storage->release = release;
  storage->release_ctx = release_ctx;
  storage->nbytes = (*out)->extent_bytes();
  return AOTIRT_OK;
}

AOTIRT_API aotirt_status aotirt_tensor_upload(const void* host_data, int64_t ndim, const int64_t* sizes,
                                              int32_t dtype, int32_t device_index, aotirt_stream* stream,
                                              aotirt_tensor** out) {
  AOTIRT_ENTRY();
  aotirt_tensor* t = nullptr;
  AOTIRT_TRY(aotirt_tensor_empty(ndim, sizes, dtype, AOTIRT_DEVICE_CUDA, device_index, stream, &t));
  size_t nbytes = 0;
  AOTIRT_TRY(contiguous_nbytes(ndim, sizes, dtype, &nbytes));
  if (nbytes > 0) {
    cudaError_t err = cudaMemcpyAsync(t->data(), host_data, nbytes, cudaMemcpyHostToDevice, t->stream->handle);
    if (err != cudaSuccess) {
      delete t;
      return fail_cuda(err, "cudaMemcpyAsync(host to device, " + std::to_string(nbytes) + " bytes)");
    }
  }
  *out = t;
  return AOTIRT_OK;
}

AOTIRT_API void aotirt_tensor_free(aotirt_tensor* t) { AOTIRT_ENTRY_POLL_ON_EXIT(); delete t; }

AOTIRT_API int64_t aotirt_tensor_ndim(const aotirt_tensor* t) { AOTIRT_ENTRY(); return t->ndim; }
AOTIRT_API const int64_t* aotirt_tensor_sizes(const aotirt_tensor* t) { AOTIRT_ENTRY(); return t->sizes; }
AOTIRT_API const int64_t* aotirt_tensor_strides(const aotirt_tensor* t) { AOTIRT_ENTRY(); return t->strides; }
AOTIRT_API int64_t aotirt_tensor_numel(const aotirt_tensor* t) { AOTIRT_ENTRY(); return t->numel(); }
AOTIRT_API int32_t aotirt_tensor_dtype(const aotirt_tensor* t) { AOTIRT_ENTRY(); return t->dtype; }
AOTIRT_API int32_t aotirt_tensor_device_type(const aotirt_tensor* t) { AOTIRT_ENTRY(); return t->storage->device_type; }
AOTIRT_API int32_t aotirt_tensor_device_index(const aotirt_tensor* t) {
  AOTIRT_ENTRY();
  return t->storage->device_index;
}
AOTIRT_API void* aotirt_tensor_data(const aotirt_tensor* t) { AOTIRT_ENTRY(); return t->data(); }
AOTIRT_API bool aotirt_tensor_is_contiguous(const aotirt_tensor* t) { AOTIRT_ENTRY(); return t->is_contiguous(); }
AOTIRT_API aotirt_stream* aotirt_tensor_stream(const aotirt_tensor* t) { AOTIRT_ENTRY(); return t->stream.get(); }

AOTIRT_API aotirt_status aotirt_tensor_narrow(const aotirt_tensor* t, int64_t dim, int64_t start, int64_t length,
                                              aotirt_tensor** out) {
  AOTIRT_ENTRY();
  // Every bound is checked without an arithmetic that could overflow (start
  // and length come from users: start + length may not fit in int64).
  const int64_t given_dim = dim;
  if (dim < 0 && dim >= -t->ndim) dim += t->ndim;
  if (dim < 0 || dim >= t->ndim)
    return fail(AOTIRT_ERROR_VALUE, "narrow: dimension " + std::to_string(given_dim) + " is out of range for " +
                                        std::to_string(t->ndim) + " dimension(s)");
  const int64_t size = t->sizes[dim];
  if (start < 0 || start > size || length < 0 || length > size - start)
    return fail(AOTIRT_ERROR_VALUE, "narrow: start " + std::to_string(start) + " and length " +
                                        std::to_string(length) + " are outside dimension " + std::to_string(dim) +
                                        " of size " + std::to_string(size) +
                                        " (0 <= start <= size and 0 <= length <= size - start)");
  int64_t offset = 0;
  if (__builtin_mul_overflow(start, t->strides[dim], &offset) ||
      __builtin_add_overflow(offset, t->storage_offset, &offset))
    return fail(AOTIRT_ERROR_VALUE, "narrow: the view's offset does not fit in int64");
  Tensor* view = alias(*t);
  if (!view) return fail(AOTIRT_ERROR_MEMORY, "out of host memory");
  view->sizes[dim] = length;
  view->storage_offset = offset;
  *out = view;
  return AOTIRT_OK;
}

AOTIRT_API void aotirt_tensor_mark_read_only(aotirt_tensor* t) { AOTIRT_ENTRY(); t->storage->read_only = true; }
AOTIRT_API bool aotirt_tensor_is_read_only(const aotirt_tensor* t) { AOTIRT_ENTRY(); return t->storage->read_only; }

AOTIRT_API aotirt_status aotirt_tensor_alias(const aotirt_tensor* t, aotirt_tensor** out) {
  AOTIRT_ENTRY();
  Tensor* copy = alias(*t);
  if (!copy) return fail(AOTIRT_ERROR_MEMORY, "out of host memory");
  *out = copy;
  return AOTIRT_OK;
}

AOTIRT_API aotirt_status aotirt_tensor_copy(aotirt_tensor* dst, const aotirt_tensor* src) {
  AOTIRT_ENTRY();
  // Queued on dst's own stream: that is where its readers look for it.
  return copy_between(*dst, *src, dst->stream.get());
}

AOTIRT_API aotirt_status aotirt_tensor_to(const aotirt_tensor* t, int32_t device_type, int32_t device_index,
                                          aotirt_stream* stream, aotirt_tensor** out) {
  AOTIRT_ENTRY();
  return tensor_to(*t, device_type, device_index, stream, out);
}

AOTIRT_API int aotirt_peer_access_enabled(int consumer, int producer) {
  AOTIRT_ENTRY();
  return peer_access_enabled(consumer, producer) ? 1 : 0;
}

AOTIRT_API aotirt_status aotirt_copy_to_host(const aotirt_tensor* t, void* dst, size_t dst_nbytes) {
  AOTIRT_ENTRY_POLL_ON_EXIT();
  aotirt_status status = copy_to_host(*t, dst, dst_nbytes);
  return status;
}

}  // extern "C"
