// What every file of shims shares: the wrapper that turns failures into
// torch's error code, and the one way shims make new tensors.
#pragma once

#include <exception>
#include <memory>
#include <string>

#include "aotirt/shim.h"
#include "runtime/errors.h"
#include "runtime/tensor.h"

namespace aotirt {

// Runs a shim body, turning a failed status or a C++ exception into the
// torch error code; exceptions must not cross into the model's C frames.
template <typename Body>
AOTITorchError shim(const char* name, Body body) {
  try {
    return body() == AOTIRT_OK ? AOTI_TORCH_SUCCESS : AOTI_TORCH_FAILURE;
  } catch (const std::exception& e) {
    fail(AOTIRT_ERROR_AOTI, std::string(name) + ": " + e.what());
  } catch (...) {
    fail(AOTIRT_ERROR_AOTI, std::string(name) + ": unknown C++ exception");
  }
  return AOTI_TORCH_FAILURE;
}

inline aotirt_status null_argument(const char* name) {
  return fail(AOTIRT_ERROR_VALUE, std::string(name) + ": a required pointer argument is NULL");
}

// A new uninitialised tensor with the given view (strides NULL: contiguous)
// over fresh storage large enough for it. CUDA memory is ordered on the
// thread's current stream of that device (else its shared stream), and the
// tensor belongs to that stream. aoti_torch_empty_strided is this.
aotirt_status new_tensor(int64_t ndim, const int64_t* sizes, const int64_t* strides, int32_t dtype,
                         int32_t device_type, int32_t device_index, Tensor** out);

// A tensor a shim is building, deleted unless handed to the caller: a shim
// that fails half-way must not leak the outputs it already made.
using OwnedTensor = std::unique_ptr<Tensor>;

}  // namespace aotirt
