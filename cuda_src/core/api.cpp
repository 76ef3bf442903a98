// The C API of include/aotirt/aotirt.h over the core's C++ objects: argument
// checks and conversions only, the work is done in the files beside this.

#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "copy.h"
#include "elf_check.h"
#include "errors.h"
#include "graph.h"
#include "handle.h"
#include "interop.h"
#include "stream.h"
#include "tensor.h"

using namespace aotirt;

namespace {

aotirt_status check_dtype(int32_t dtype) {
  if (dtype_itemsize(dtype) != 0) return AOTIRT_OK;
  return fail(AOTIRT_ERROR_TYPE, "dtype code " + std::to_string(dtype) + " is not supported");
}

aotirt_status stream_or_shared(aotirt_stream* stream, int device, StreamRef* out) {
  if (!stream) return shared_stream(device, out);
  if (stream->device != device)
    return fail(AOTIRT_ERROR_VALUE, "the stream is on cuda:" + std::to_string(stream->device) +
                                        ", the tensor on cuda:" + std::to_string(device));
  *out = StreamRef::share(stream);
  return AOTIRT_OK;
}

// The release of an imported DLPack tensor: the producer's deleter.
template <typename Managed>
void call_deleter(void* managed) {
  auto* m = static_cast<Managed*>(managed);
  if (m->deleter) m->deleter(m);
}

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

AOTIRT_API int aotirt_device_count(void) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

AOTIRT_API aotirt_status aotirt_cuda_device_count(int* count) {
  *count = 0;
  cudaError_t err = cudaGetDeviceCount(count);
  if (err != cudaSuccess) {
    *count = 0;
    return fail_cuda(err, "cudaGetDeviceCount");
  }
  return AOTIRT_OK;
}

AOTIRT_API size_t aotirt_dtype_itemsize(int32_t dtype) { return dtype_itemsize(dtype); }

// ---- streams ----

AOTIRT_API aotirt_status aotirt_stream_shared(int device, aotirt_stream** out) {
  StreamRef stream;
  AOTIRT_TRY(shared_stream(device, &stream));
  *out = stream.leak();
  return AOTIRT_OK;
}

AOTIRT_API aotirt_status aotirt_stream_create(int device, aotirt_stream** out) {
  StreamRef stream;
  AOTIRT_TRY(create_stream(device, &stream));
  *out = stream.leak();
  return AOTIRT_OK;
}

AOTIRT_API aotirt_status aotirt_stream_adopt(void* cuda_stream, int device, aotirt_stream** out) {
  *out = adopt_stream(static_cast<cudaStream_t>(cuda_stream), device).leak();
  return AOTIRT_OK;
}

AOTIRT_API aotirt_status aotirt_stream_adopt_owned(void* cuda_stream, int device, void (*release)(void*),
                                                   void* release_ctx, aotirt_stream** out) {
  StreamRef stream = adopt_stream(static_cast<cudaStream_t>(cuda_stream), device);
  stream->release = release;
  stream->release_ctx = release_ctx;
  *out = stream.leak();
  return AOTIRT_OK;
}

AOTIRT_API aotirt_stream* aotirt_stream_retain(aotirt_stream* stream) {
  stream->add_ref();
  return stream;
}

AOTIRT_API void aotirt_stream_release(aotirt_stream* stream) {
  if (stream) StreamRef::adopt(stream).reset();
}

AOTIRT_API void* aotirt_stream_handle(const aotirt_stream* stream) { return stream->handle; }
AOTIRT_API int aotirt_stream_device(const aotirt_stream* stream) { return stream->device; }

// ---- tensors ----

AOTIRT_API aotirt_status aotirt_tensor_empty(int64_t ndim, const int64_t* sizes, int32_t dtype,
                                             int32_t device_type, int32_t device_index, aotirt_stream* stream,
                                             aotirt_tensor** out) {
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

AOTIRT_API void aotirt_tensor_free(aotirt_tensor* t) {
  delete t;
  release_finished_borrowed();
}

AOTIRT_API int64_t aotirt_tensor_ndim(const aotirt_tensor* t) { return t->ndim; }
AOTIRT_API const int64_t* aotirt_tensor_sizes(const aotirt_tensor* t) { return t->sizes; }
AOTIRT_API const int64_t* aotirt_tensor_strides(const aotirt_tensor* t) { return t->strides; }
AOTIRT_API int64_t aotirt_tensor_numel(const aotirt_tensor* t) { return t->numel(); }
AOTIRT_API int32_t aotirt_tensor_dtype(const aotirt_tensor* t) { return t->dtype; }
AOTIRT_API int32_t aotirt_tensor_device_type(const aotirt_tensor* t) { return t->storage->device_type; }
AOTIRT_API int32_t aotirt_tensor_device_index(const aotirt_tensor* t) { return t->storage->device_index; }
AOTIRT_API void* aotirt_tensor_data(const aotirt_tensor* t) { return t->data(); }
AOTIRT_API bool aotirt_tensor_is_contiguous(const aotirt_tensor* t) { return t->is_contiguous(); }
AOTIRT_API aotirt_stream* aotirt_tensor_stream(const aotirt_tensor* t) { return t->stream.get(); }

AOTIRT_API aotirt_status aotirt_tensor_narrow(const aotirt_tensor* t, int64_t dim, int64_t start, int64_t length,
                                              aotirt_tensor** out) {
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

AOTIRT_API void aotirt_tensor_mark_read_only(aotirt_tensor* t) { t->storage->read_only = true; }
AOTIRT_API bool aotirt_tensor_is_read_only(const aotirt_tensor* t) { return t->storage->read_only; }

AOTIRT_API aotirt_status aotirt_tensor_alias(const aotirt_tensor* t, aotirt_tensor** out) {
  Tensor* copy = alias(*t);
  if (!copy) return fail(AOTIRT_ERROR_MEMORY, "out of host memory");
  *out = copy;
  return AOTIRT_OK;
}

AOTIRT_API aotirt_status aotirt_tensor_copy(aotirt_tensor* dst, const aotirt_tensor* src) {
  // Queue on dst's own stream: that is where its readers look for it.
  Stream* previous = current_stream();
  if (dst->stream) set_current_stream(dst->stream.get());
  aotirt_status status = copy_between(*dst, *src);
  set_current_stream(previous);
  return status;
}

AOTIRT_API aotirt_status aotirt_copy_to_host(const aotirt_tensor* t, void* dst, size_t dst_nbytes) {
  aotirt_status status = copy_to_host(*t, dst, dst_nbytes);
  release_finished_borrowed();  // after the wait: some may have finished
  return status;
}

// ---- interop ----

AOTIRT_API aotirt_status aotirt_pointer_device(const void* ptr, int32_t* device_index) {
  cudaPointerAttributes attributes{};
  cudaError_t err = cudaPointerGetAttributes(&attributes, ptr);
  if (err != cudaSuccess) return fail_cuda(err, "cudaPointerGetAttributes, finding the device of a pointer");
  char where[32];
  std::snprintf(where, sizeof(where), "%p", ptr);
  switch (attributes.type) {
    case cudaMemoryTypeDevice:
    case cudaMemoryTypeManaged:
      *device_index = attributes.device;
      return AOTIRT_OK;
    case cudaMemoryTypeHost:
      return fail(AOTIRT_ERROR_VALUE, std::string("memory at ") + where +
                                          " is pinned host memory, not device memory (pass it as a host array)");
    default:
      return fail(AOTIRT_ERROR_VALUE, std::string("memory at ") + where + " is not CUDA device memory");
  }
}

AOTIRT_API aotirt_status aotirt_tensor_wrap_device(void* data, int64_t ndim, const int64_t* sizes,
                                                   const int64_t* strides, int32_t dtype, int32_t device_index,
                                                   void* producer_stream, aotirt_stream* stream,
                                                   void (*release)(void*), void* release_ctx,
                                                   aotirt_tensor** out) {
  release_finished_borrowed();
  AOTIRT_TRY(check_dtype(dtype));
  StreamRef owner;
  AOTIRT_TRY(stream_or_shared(stream, device_index, &owner));
  if (producer_stream)
    AOTIRT_TRY(order_raw_before(static_cast<cudaStream_t>(producer_stream), device_index, owner.get()));
  return wrap_borrowed(data, ndim, sizes, strides, dtype, AOTIRT_DEVICE_CUDA, device_index, std::move(owner),
                       release, release_ctx, out);
}

AOTIRT_API aotirt_status aotirt_tensor_from_dlpack(DLManagedTensor* managed, aotirt_stream* stream,
                                                   aotirt_tensor** out) {
  release_finished_borrowed();
  if (!managed) return fail(AOTIRT_ERROR_VALUE, "the DLPack tensor is NULL");
  return from_dlpack(managed->dl_tensor, stream, &call_deleter<DLManagedTensor>, managed, out);
}

AOTIRT_API aotirt_status aotirt_tensor_from_dlpack_versioned(DLManagedTensorVersioned* managed,
                                                             aotirt_stream* stream, aotirt_tensor** out) {
  release_finished_borrowed();
  if (!managed) return fail(AOTIRT_ERROR_VALUE, "the DLPack tensor is NULL");
  if (managed->version.major != DLPACK_MAJOR_VERSION)
    return fail(AOTIRT_ERROR_VALUE, "the DLPack tensor has version " + std::to_string(managed->version.major) + "." +
                                        std::to_string(managed->version.minor) + "; aotirt reads version " +
                                        std::to_string(DLPACK_MAJOR_VERSION) + ".x");
  AOTIRT_TRY(from_dlpack(managed->dl_tensor, stream, &call_deleter<DLManagedTensorVersioned>, managed, out));
  if (managed->flags & DLPACK_FLAG_BITMASK_READ_ONLY) (*out)->storage->read_only = true;
  return AOTIRT_OK;
}

AOTIRT_API aotirt_status aotirt_tensor_to_dlpack(const aotirt_tensor* t, DLManagedTensor** out) {
  return to_dlpack(*t, out);
}

AOTIRT_API aotirt_status aotirt_tensor_to_dlpack_versioned(const aotirt_tensor* t,
                                                           DLManagedTensorVersioned** out) {
  return to_dlpack(*t, out);
}

AOTIRT_API aotirt_status aotirt_tensor_order_before(const aotirt_tensor* t, void* consumer_stream) {
  if (t->storage->device_type != AOTIRT_DEVICE_CUDA) return AOTIRT_OK;
  StreamRef producer = t->stream;
  if (!producer) AOTIRT_TRY(shared_stream(t->storage->device_index, &producer));
  return order_before_raw(producer.get(), static_cast<cudaStream_t>(consumer_stream), producer->device);
}

AOTIRT_API aotirt_status aotirt_host_alloc_pinned(size_t nbytes, void** out) {
  *out = nullptr;
  // Portable: copies to and from any device run at full bandwidth. One byte
  // at least, so that an empty array still has an address of its own.
  cudaError_t err = cudaHostAlloc(out, nbytes > 0 ? nbytes : 1, cudaHostAllocPortable);
  if (err != cudaSuccess) {
    *out = nullptr;
    return fail_cuda(err, "cudaHostAlloc(" + std::to_string(nbytes) + " bytes of pinned host memory)");
  }
  return AOTIRT_OK;
}

AOTIRT_API void aotirt_host_free_pinned(void* ptr) {
  // Not on any run path: only when a pinned array is garbage collected.
  if (ptr) cudaFreeHost(ptr);
}

// ---- handles ----

AOTIRT_API aotirt_status aotirt_library_undefined_symbols(const char* path, const char* prefix, const char** names) {
  if (!path || !prefix) return fail(AOTIRT_ERROR_VALUE, "path and prefix must not be NULL");
  AOTIRT_TRY(check_shared_library(path));
  std::vector<std::string> found;
  AOTIRT_TRY(undefined_symbols(path, prefix, &found));
  thread_local std::string joined;
  joined.clear();
  for (const std::string& name : found) joined += name + "\n";
  *names = joined.c_str();
  return AOTIRT_OK;
}

AOTIRT_API aotirt_status aotirt_handle_open(const char* path, int32_t device_type, int32_t device_index,
                                            aotirt_stream* stream, aotirt_handle** out) {
  if (!path) return fail(AOTIRT_ERROR_VALUE, "model library path is NULL");
  if (device_type == AOTIRT_DEVICE_CPU) return aotirt_handle::open_cpu(path, out);
  if (device_type == AOTIRT_DEVICE_CUDA) return CudaHandle::open(path, device_index, stream, out);
  return fail(AOTIRT_ERROR_VALUE, "device type " + std::to_string(device_type) + " is not supported (cpu 0, cuda 1)");
}

AOTIRT_API size_t aotirt_handle_num_inputs(const aotirt_handle* h) { return h->num_inputs(); }
AOTIRT_API size_t aotirt_handle_num_outputs(const aotirt_handle* h) { return h->num_outputs(); }
AOTIRT_API const char* aotirt_handle_input_name(const aotirt_handle* h, size_t i) { return h->input_name(i); }
AOTIRT_API const char* aotirt_handle_output_name(const aotirt_handle* h, size_t i) { return h->output_name(i); }
AOTIRT_API bool aotirt_handle_is_closed(const aotirt_handle* h) { return h->closed(); }
AOTIRT_API int32_t aotirt_handle_device_type(const aotirt_handle* h) { return h->device_type(); }
AOTIRT_API int32_t aotirt_handle_device_index(const aotirt_handle* h) { return h->device_index(); }
AOTIRT_API aotirt_stream* aotirt_handle_stream(const aotirt_handle* h) { return h->stream(); }

AOTIRT_API aotirt_status aotirt_handle_run(aotirt_handle* h, aotirt_tensor* const* inputs, size_t num_inputs,
                                           aotirt_tensor** outputs, size_t num_outputs) {
  release_finished_borrowed();  // no core lock is held here
  return h->run(inputs, num_inputs, outputs, num_outputs);
}

AOTIRT_API aotirt_status aotirt_handle_update_constants_from_blob(aotirt_handle* h, const uint8_t* blob) {
  if (!blob) return fail(AOTIRT_ERROR_VALUE, "the weights blob is NULL");
  return h->update_constants_from_blob(blob, 0, false);
}

AOTIRT_API aotirt_status aotirt_handle_update_constants_from_blob_sized(aotirt_handle* h, const uint8_t* blob,
                                                                      size_t nbytes) {
  if (!blob) return fail(AOTIRT_ERROR_VALUE, "the weights blob is NULL");
  return h->update_constants_from_blob(blob, nbytes, true);
}

AOTIRT_API aotirt_status aotirt_handle_constants_blob_size(const aotirt_handle* h, uint64_t* nbytes, bool* exact) {
  return h->constants_blob_size(nbytes, exact);
}

AOTIRT_API aotirt_status aotirt_handle_close(aotirt_handle* h) { return h->close(); }
AOTIRT_API void aotirt_handle_free(aotirt_handle* h) { delete h; }

// ---- CUDA graphs ----

AOTIRT_API aotirt_status aotirt_graph_capture(aotirt_handle* h, aotirt_tensor* const* example_inputs, size_t n,
                                              int warmup, aotirt_graph** out) {
  return aotirt_graph_capture_feedback(h, example_inputs, n, warmup, nullptr, 0, out);
}

AOTIRT_API aotirt_status aotirt_graph_capture_feedback(aotirt_handle* h, aotirt_tensor* const* example_inputs,
                                                       size_t n, int warmup, const size_t* feedback,
                                                       size_t num_feedback, aotirt_graph** out) {
  if (!h || !out) return fail(AOTIRT_ERROR_VALUE, "aotirt_graph_capture: the handle and `out` must not be NULL");
  release_finished_borrowed();  // not during the capture: it queries events
  return aotirt_graph::capture(h, example_inputs, n, warmup, feedback, num_feedback, out);
}

AOTIRT_API aotirt_status aotirt_graph_replay(aotirt_graph* g, aotirt_tensor* const* inputs, size_t n,
                                             aotirt_tensor** outputs) {
  release_finished_borrowed();  // no core lock is held here
  return g->replay(inputs, n, outputs);
}

AOTIRT_API size_t aotirt_graph_num_inputs(const aotirt_graph* g) { return g->num_inputs(); }
AOTIRT_API size_t aotirt_graph_num_outputs(const aotirt_graph* g) { return g->num_outputs(); }
AOTIRT_API aotirt_tensor* aotirt_graph_input(const aotirt_graph* g, size_t i) { return g->input(i); }
AOTIRT_API aotirt_tensor* aotirt_graph_output(const aotirt_graph* g, size_t i) { return g->output(i); }
AOTIRT_API bool aotirt_graph_is_closed(const aotirt_graph* g) { return g->closed(); }
AOTIRT_API aotirt_status aotirt_graph_close(aotirt_graph* g) { return g->close(); }
AOTIRT_API void aotirt_graph_free(aotirt_graph* g) { delete g; }

}  // extern "C"
