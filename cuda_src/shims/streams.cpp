// The stream shims (include/aotirt/shim.h): the CUDA stream guard generated
// code opens around a run's kernels, and the current stream it asks for.

#include "aotirt/shim.h"

#include <new>

#include "runtime/errors.h"
#include "runtime/stream.h"
#include "shims/shim_helpers.h"

using aotirt::Stream;
using aotirt::StreamRef;
using aotirt::shim;

namespace {

struct StreamGuard {
  Stream* previous_stream = nullptr;
  StreamRef stream;  // keeps an adopted stream alive while it is current
  aotirt::DeviceGuard device;
};

// Keeps the last stream handed out by aoti_torch_get_current_cuda_stream
// alive: the caller receives a raw cudaStream_t and holds no reference.
thread_local StreamRef last_stream_handed_out;

}  // namespace

extern "C" {

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

}  // extern "C"
