#include "runtime/interop.h"

#include <new>
#include <string>

#include "runtime/dtypes.h"
#include "runtime/errors.h"

namespace aotirt {

aotirt_status wrap_borrowed(void* data, int64_t ndim, const int64_t* sizes, const int64_t* strides,
                            int32_t dtype, int32_t device_type, int32_t device_index, StreamRef stream,
                            void (*release)(void*), void* release_ctx, Tensor** out) {
  AOTIRT_TRY(check_shape(ndim, sizes));
  if (strides)
    for (int64_t d = 0; d < ndim; ++d)
      if (strides[d] < 0)
        return fail(AOTIRT_ERROR_VALUE, "stride " + std::to_string(strides[d]) + " of dimension " +
                                            std::to_string(d) +
                                            " is negative: aotirt tensors take non-negative strides "
                                            "(make a copy of the array first)");
  auto storage = StorageRef::adopt(new (std::nothrow) Storage());
  if (!storage) return fail(AOTIRT_ERROR_MEMORY, "out of host memory for a tensor storage");
  storage->data = data;
  storage->device_type = device_type;
  storage->device_index = device_index;
  storage->owner = Storage::Owner::Borrowed;
  storage->stream = stream;
  AOTIRT_TRY(make_tensor(storage, ndim, sizes, strides, 0, dtype, std::move(stream), out));
  // Only now does the storage own the release: on failure the caller keeps it.
  storage->release = release;
  storage->release_ctx = release_ctx;
  storage->nbytes = (*out)->extent_bytes();
  return AOTIRT_OK;
}

aotirt_status order_before_raw(Stream* producer, cudaStream_t consumer, int device) {
  if (producer->handle == consumer) return AOTIRT_OK;
  // cudaStreamLegacy and cudaStreamPerThread name the current device's stream.
  DeviceGuard guard;
  AOTIRT_TRY(guard.enter(device));
  StreamRef waiter = adopt_stream(consumer, device);
  return producer->order_before(waiter.get());
}

aotirt_status order_raw_before(cudaStream_t producer, int device, Stream* consumer) {
  if (consumer->handle == producer) return AOTIRT_OK;
  DeviceGuard guard;
  AOTIRT_TRY(guard.enter(device));
  StreamRef source = adopt_stream(producer, device);
  return source->order_before(consumer);
}

aotirt_status from_dlpack(const DLTensor& dl, Stream* stream, void (*release)(void*), void* release_ctx,
                          Tensor** out) {
  const int32_t dtype = dtype_from_dlpack(dl.dtype);
  if (dtype < 0)
    return fail(AOTIRT_ERROR_TYPE, "DLPack dtype (code " + std::to_string(dl.dtype.code) + ", " +
                                       std::to_string(dl.dtype.bits) + " bits, " +
                                       std::to_string(dl.dtype.lanes) +
                                       " lanes) is not supported: aotirt takes bool, uint8, int8/16/32/64, "
                                       "float16/32/64 and bfloat16");
  if (dl.ndim < 0 || dl.ndim > AOTIRT_MAX_DIMS)
    return fail(AOTIRT_ERROR_VALUE, "the DLPack tensor has " + std::to_string(dl.ndim) +
                                        " dimensions, aotirt takes 0 to " + std::to_string(AOTIRT_MAX_DIMS));
  if (dl.ndim > 0 && !dl.shape) return fail(AOTIRT_ERROR_VALUE, "the DLPack tensor has no shape");
  void* data = dl.data ? static_cast<char*>(dl.data) + dl.byte_offset : nullptr;
  switch (dl.device.device_type) {
    case kDLCPU:
    case kDLCUDAHost:  // pinned host memory is host memory
      return wrap_borrowed(data, dl.ndim, dl.shape, dl.strides, dtype, AOTIRT_DEVICE_CPU, 0, StreamRef(), release,
                           release_ctx, out);
    case kDLCUDA:
    case kDLCUDAManaged: {
      const int device = dl.device.device_id;
      StreamRef owner;
      if (!stream) {
        AOTIRT_TRY(shared_stream(device, &owner));
      } else if (stream->device != device) {
        return fail(AOTIRT_ERROR_VALUE, "the DLPack tensor is on cuda:" + std::to_string(device) +
                                            ", the stream on cuda:" + std::to_string(stream->device));
      } else {
        owner = StreamRef::share(stream);
      }
      // The producer has ordered its work before `stream` (the consumer stream
      // it was given), so the data is ready there: the tensor belongs to it.
      return wrap_borrowed(data, dl.ndim, dl.shape, dl.strides, dtype, AOTIRT_DEVICE_CUDA, device, std::move(owner),
                           release, release_ctx, out);
    }
    default:
      return fail(AOTIRT_ERROR_VALUE, "DLPack device type " + std::to_string(dl.device.device_type) +
                                          " is not supported (aotirt takes kDLCPU 1, kDLCUDA 2, kDLCUDAHost 3, "
                                          "kDLCUDAManaged 13)");
  }
}

namespace {

// What a DLPack tensor that aotirt exports points to: an alias of the tensor
// (a reference to its storage and its stream) and the shape and strides the
// DLTensor points into.
template <typename Managed>
struct Exported {
  Managed managed{};
  Tensor* alias = nullptr;
  int64_t shape[AOTIRT_MAX_DIMS] = {};
  int64_t strides[AOTIRT_MAX_DIMS] = {};

  // May run on any thread, with or without the GIL: it only drops references.
  static void deleter(Managed* self) {
    auto* exported = static_cast<Exported*>(self->manager_ctx);
    delete exported->alias;
    delete exported;
  }
};

// Also says whether the tensor is read-only, which only the versioned form
// can: a legacy capsule of read-only memory would let its consumer write it.
bool set_version(DLManagedTensor&, bool read_only) { return !read_only; }
bool set_version(DLManagedTensorVersioned& m, bool read_only) {
  m.version.major = DLPACK_MAJOR_VERSION;
  m.version.minor = DLPACK_MINOR_VERSION;
  m.flags = read_only ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
  return true;
}

}  // namespace

template <typename Managed>
aotirt_status to_dlpack(const Tensor& t, Managed** out) {
  auto* exported = new (std::nothrow) Exported<Managed>();
  if (!exported) return fail(AOTIRT_ERROR_MEMORY, "out of host memory for a DLPack tensor");
  if (!set_version(exported->managed, t.storage->read_only)) {
    delete exported;
    return fail(AOTIRT_ERROR_VALUE, "the tensor wraps read-only memory, which a legacy (unversioned) DLPack "
                                    "capsule cannot mark read-only: ask for DLPack 1.0 (max_version=(1, 0))");
  }
  exported->alias = alias(t);
  if (!exported->alias) {
    delete exported;
    return fail(AOTIRT_ERROR_MEMORY, "out of host memory for a DLPack tensor");
  }
  Managed& m = exported->managed;
  m.manager_ctx = exported;
  m.deleter = &Exported<Managed>::deleter;
  DLTensor& dl = m.dl_tensor;
  dl.data = t.data();
  dl.byte_offset = 0;
  const Storage& storage = *t.storage;
  if (storage.device_type == AOTIRT_DEVICE_CUDA) {
    dl.device.device_type = kDLCUDA;
    dl.device.device_id = storage.device_index;
  } else {
    dl.device.device_type = kDLCPU;
    dl.device.device_id = 0;
  }
  dl.ndim = static_cast<int32_t>(t.ndim);
  dl.dtype = dtype_to_dlpack(t.dtype);
  for (int64_t d = 0; d < t.ndim; ++d) {
    exported->shape[d] = t.sizes[d];
    exported->strides[d] = t.strides[d];
  }
  dl.shape = exported->shape;
  dl.strides = exported->strides;
  *out = &m;
  return AOTIRT_OK;
}

template aotirt_status to_dlpack<DLManagedTensor>(const Tensor&, DLManagedTensor**);
template aotirt_status to_dlpack<DLManagedTensorVersioned>(const Tensor&, DLManagedTensorVersioned**);

}  // namespace aotirt
