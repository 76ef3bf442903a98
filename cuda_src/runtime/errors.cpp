#include "runtime/errors.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
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

// The sticky error of each device, 0 while it is usable.
constexpr int kMaxDevices = 256;
std::atomic<int> lost_device[kMaxDevices];

bool is_sticky(cudaError_t code) {
  switch (code) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

// CUDA says cudaErrorInsufficientDriver both for a driver older than the
// runtime and for no driver at all. The second is the common case on a
// machine without a GPU, and needs another remedy: say which it is. Empty
// when the driver library is there.
const std::string& missing_driver_reason() {
  static std::once_flag once;
  static std::string reason;
  std::call_once(once, [] {
    if (dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD)) return;  // loaded: the driver is there, only too old
    if (dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) return;   // kept open: CUDA would open it anyway
    const char* why = dlerror();
    reason = std::string("no NVIDIA driver found: libcuda.so.1 cannot be loaded") + (why ? std::string(" (") + why + ")" : "") +
             "; install the NVIDIA driver, or run on the CPU";
  });
  return reason;
}

void remember_if_sticky(cudaError_t code) {
  int device = -1;
  if (is_sticky(code) && cudaGetDevice(&device) == cudaSuccess) note_cuda_error(device, code);
}

}  // namespace

void note_cuda_error(int device, cudaError_t code) {
  if (!is_sticky(code) || device < 0 || device >= kMaxDevices) return;
  int expected = 0;
  lost_device[device].compare_exchange_strong(expected, static_cast<int>(code));
}

aotirt_status check_device_usable(int device) {
  if (device < 0 || device >= kMaxDevices) return AOTIRT_OK;
  int code = lost_device[device].load(std::memory_order_relaxed);
  if (code == 0) return AOTIRT_OK;
  LastError& e = last_error();
  e.cuda_code = code;
  e.cuda_name = cudaGetErrorName(static_cast<cudaError_t>(code));
  e.message = e.cuda_name + ": cuda:" + std::to_string(device) + " is unusable: an earlier kernel failed (" +
              cudaGetErrorString(static_cast<cudaError_t>(code)) +
              ") and CUDA cannot recover the device's context in this process; restart the process";
  return AOTIRT_ERROR_CUDA;
}

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
  remember_if_sticky(code);
  LastError& e = last_error();
  e.cuda_code = static_cast<int>(code);
  e.cuda_name = cudaGetErrorName(code);
  const std::string& no_driver = code == cudaErrorInsufficientDriver ? missing_driver_reason() : std::string();
  e.message = e.cuda_name + ": " + (no_driver.empty() ? cudaGetErrorString(code) : no_driver) + " (in " + what + ")";
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
