// The thread's last error, and the helpers every core function reports with.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "aotirt/aotirt.h"

namespace aotirt {

// Records the error as the thread's last and returns its status, so that a
// failing path reads `return fail(AOTIRT_ERROR_VALUE, "...");`.
aotirt_status fail(aotirt_status kind, std::string message);
// `what` names the call that failed ("cudaMallocAsync(64 bytes)"); the
// message adds CUDA's name and description of `code`.
aotirt_status fail_cuda(cudaError_t code, const std::string& what);

// After a sticky error (a kernel fault) the device's CUDA context is lost for
// good: every later call fails. The first such error is remembered, and work
// for that device is refused up front with a message that says why.
// Returns AOTIRT_OK while the device is usable.
aotirt_status check_device_usable(int device);
// Notes an error CUDA returned for work on `device` (see above).
void note_cuda_error(int device, cudaError_t code);

// Makes the thread's last error empty (the start of every public call that
// can fail is free to skip this: only a failure's message is ever read).
void clear_error();

// cudaEventQuery as a poll: cudaSuccess (done), cudaErrorNotReady (not yet)
// or an error. "Not ready" is an answer, not an error, but CUDA keeps it as
// the thread's last error, where the next kernel launch's cudaGetLastError()
// check would report it (torch clears it for the same reason); so it is
// cleared here. Every poll of an event goes through this.
inline cudaError_t poll_event(cudaEvent_t event) {
  const cudaError_t state = cudaEventQuery(event);
  if (state == cudaErrorNotReady) (void)cudaGetLastError();
  return state;
}

}  // namespace aotirt

// Returns from the enclosing function with AOTIRT_ERROR_CUDA when a CUDA call
// fails. The call's text becomes the message, so nothing has to be repeated.
#define AOTIRT_CUDA_TRY(call)                                     \
  do {                                                            \
    cudaError_t aotirt_cuda_status_ = (call);                     \
    if (aotirt_cuda_status_ != cudaSuccess)                       \
      return ::aotirt::fail_cuda(aotirt_cuda_status_, #call);     \
  } while (0)

// Propagates a failed aotirt_status unchanged.
#define AOTIRT_TRY(expr)                       \
  do {                                         \
    aotirt_status aotirt_status_ = (expr);     \
    if (aotirt_status_ != AOTIRT_OK)           \
      return aotirt_status_;                   \
  } while (0)
