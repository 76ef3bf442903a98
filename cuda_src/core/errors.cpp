#include "errors.h"

#include <utility>

namespace aotirt {
namespace {

struct LastError {
  std::string message;
  int cuda_code = 0;
  std::string cuda_name;
};

LastError& last_error() {
  thread_local LastError error;
  return error;
}

}  // namespace

aotirt_status fail(aotirt_status kind, std::string message) {
  LastError& e = last_error();
  e.message = std::move(message);
  e.cuda_code = 0;
  e.cuda_name.clear();
  return kind;
}

aotirt_status fail_cuda(cudaError_t code, const std::string& what) {
  // Reading the error clears CUDA's sticky last error for non-sticky codes,
  // so a later unrelated launch check does not report this one again.
  (void)cudaGetLastError();
  LastError& e = last_error();
  e.cuda_code = static_cast<int>(code);
  e.cuda_name = cudaGetErrorName(code);
  e.message = e.cuda_name + ": " + cudaGetErrorString(code) + " (in " + what + ")";
  return AOTIRT_ERROR_CUDA;
}

void clear_error() {
  LastError& e = last_error();
  e.message.clear();
  e.cuda_code = 0;
  e.cuda_name.clear();
}

}  // namespace aotirt

extern "C" {

AOTIRT_API const char* aotirt_last_error_message(void) {
  return aotirt::last_error().message.c_str();
}

AOTIRT_API int aotirt_last_error_cuda_code(void) { return aotirt::last_error().cuda_code; }

AOTIRT_API const char* aotirt_last_error_cuda_name(void) {
  return aotirt::last_error().cuda_name.c_str();
}

}  // extern "C"
