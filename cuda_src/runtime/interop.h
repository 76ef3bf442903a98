// Interop with other CUDA libraries: borrowed device memory, DLPack in and
// out, the consumer-stream handshake, pinned host memory.
#pragma once

#include <cuda_runtime_api.h>

#include "aotirt/aotirt.h"
#include "aotirt/dlpack.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace aotirt {

// A tensor over memory someone else owns. A CUDA tensor belongs to `stream`
// (its storage is released only once the GPU has passed it, see
// Storage::~Storage); a CPU tensor has no stream. `strides` NULL: contiguous;
// negative strides are refused. On failure `release` is not called: the
// caller still owns the memory.
aotirt_status wrap_borrowed(void* data, int64_t ndim, const int64_t* sizes, const int64_t* strides,
                            int32_t dtype, int32_t device_type, int32_t device_index, StreamRef stream,
                            void (*release)(void*), void* release_ctx, Tensor** out);

// Makes `consumer` (a raw stream on `device`: a cudaStream_t, cudaStreamLegacy
// or cudaStreamPerThread) wait on the device for the work queued on
// `producer` so far. No host wait.
aotirt_status order_before_raw(Stream* producer, cudaStream_t consumer, int device);
// The reverse: `consumer` waits for the work queued so far on the raw stream
// `producer` of `device`.
aotirt_status order_raw_before(cudaStream_t producer, int device, Stream* consumer);

// A tensor over the memory a DLPack tensor describes; `release(release_ctx)`
// (which calls the producer's deleter) runs when it is no longer used.
aotirt_status from_dlpack(const DLTensor& dl, Stream* stream, void (*release)(void*), void* release_ctx,
                          Tensor** out);

// A new managed tensor that keeps an alias of `t` (its storage and stream)
// alive until its deleter runs. `Managed` is DLManagedTensor or
// DLManagedTensorVersioned.
template <typename Managed>
aotirt_status to_dlpack(const Tensor& t, Managed** out);

}  // namespace aotirt
