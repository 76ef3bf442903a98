// The C API of include/aotirt/aotirt.h: memory other libraries own, DLPack,
// the consumer-stream handshake, pinned host memory. Argument checks and
// conversions only; the work is done in interop.cpp.

#include <cstdio>
#include <string>

#include "runtime/entry.h"
#include "runtime/errors.h"
#include "runtime/interop.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

using namespace aotirt;

namespace {

// The release of an imported DLPack tensor: the producer's deleter.
template <typename Managed>
void call_deleter(void* managed) {
  auto* m = static_cast<Managed*>(managed);
  if (m->deleter) m->deleter(m);
}

}  // namespace

extern "C" {

AOTIRT_API aotirt_status aotirt_pointer_device(const void* ptr, int32_t* device_index) {
  AOTIRT_ENTRY();
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
  AOTIRT_ENTRY();
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
  AOTIRT_ENTRY();
  if (!managed) return fail(AOTIRT_ERROR_VALUE, "the DLPack tensor is NULL");
  return from_dlpack(managed->dl_tensor, stream, &call_deleter<DLManagedTensor>, managed, out);
}

AOTIRT_API aotirt_status aotirt_tensor_from_dlpack_versioned(DLManagedTensorVersioned* managed,
                                                             aotirt_stream* stream, aotirt_tensor** out) {
  AOTIRT_ENTRY();
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
  AOTIRT_ENTRY();
  return to_dlpack(*t, out);
}

AOTIRT_API aotirt_status aotirt_tensor_to_dlpack_versioned(const aotirt_tensor* t,
                                                           DLManagedTensorVersioned** out) {
  AOTIRT_ENTRY();
  return to_dlpack(*t, out);
}

AOTIRT_API aotirt_status aotirt_tensor_order_before(const aotirt_tensor* t, void* consumer_stream) {
  AOTIRT_ENTRY();
  if (t->storage->device_type != AOTIRT_DEVICE_CUDA) return AOTIRT_OK;
  StreamRef producer = t->stream;
  if (!producer) AOTIRT_TRY(shared_stream(t->storage->device_index, &producer));
  return order_before_raw(producer.get(), static_cast<cudaStream_t>(consumer_stream), producer->device);
}

AOTIRT_API aotirt_status aotirt_host_alloc_pinned(size_t nbytes, void** out) {
  AOTIRT_ENTRY();
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
  AOTIRT_ENTRY();
  // Not on any run path: only when a pinned array is garbage collected.
  if (ptr) cudaFreeHost(ptr);
}

}  // extern "C"
