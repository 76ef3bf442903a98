// The C API of include/aotirt/aotirt.h: devices and streams. Argument checks
// and conversions only; the work is done in stream.cpp.

#include "runtime/entry.h"
#include "runtime/errors.h"
#include "runtime/stream.h"

using namespace aotirt;

extern "C" {

AOTIRT_API int aotirt_device_count(void) {
  AOTIRT_ENTRY();
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

AOTIRT_API aotirt_status aotirt_cuda_device_count(int* count) {
  AOTIRT_ENTRY();
  *count = 0;
  cudaError_t err = cudaGetDeviceCount(count);
  if (err != cudaSuccess) {
    *count = 0;
    return fail_cuda(err, "cudaGetDeviceCount");
  }
  return AOTIRT_OK;
}

AOTIRT_API aotirt_status aotirt_stream_shared(int device, aotirt_stream** out) {
  AOTIRT_ENTRY();
  StreamRef stream;
  AOTIRT_TRY(shared_stream(device, &stream));
  *out = stream.leak();
  return AOTIRT_OK;
}

AOTIRT_API aotirt_status aotirt_stream_create(int device, aotirt_stream** out) {
  AOTIRT_ENTRY();
  StreamRef stream;
  AOTIRT_TRY(create_stream(device, &stream));
  *out = stream.leak();
  return AOTIRT_OK;
}

AOTIRT_API aotirt_status aotirt_stream_adopt(void* cuda_stream, int device, aotirt_stream** out) {
  AOTIRT_ENTRY();
  *out = adopt_stream(static_cast<cudaStream_t>(cuda_stream), device).leak();
  return AOTIRT_OK;
}

AOTIRT_API aotirt_status aotirt_stream_adopt_owned(void* cuda_stream, int device, void (*release)(void*),
                                                   void* release_ctx, aotirt_stream** out) {
  AOTIRT_ENTRY();
  StreamRef stream = adopt_stream(static_cast<cudaStream_t>(cuda_stream), device);
  stream->release = release;
  stream->release_ctx = release_ctx;
  *out = stream.leak();
  return AOTIRT_OK;
}

AOTIRT_API aotirt_stream* aotirt_stream_retain(aotirt_stream* stream) {
  AOTIRT_ENTRY();
  stream->add_ref();
  return stream;
}

AOTIRT_API void aotirt_stream_release(aotirt_stream* stream) {
  AOTIRT_ENTRY();
  if (stream) StreamRef::adopt(stream).reset();
}

AOTIRT_API void* aotirt_stream_handle(const aotirt_stream* stream) { AOTIRT_ENTRY(); return stream->handle; }
AOTIRT_API int aotirt_stream_device(const aotirt_stream* stream) { AOTIRT_ENTRY(); return stream->device; }

}  // extern "C"
