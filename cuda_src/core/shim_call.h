// The one wrapper every aoti_torch_* shim body runs in.
#pragma once

#include <exception>
#include <string>

#include "aotirt/shim.h"
#include "errors.h"

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

}  // namespace aotirt
