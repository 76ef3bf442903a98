#include "shims/libs/cublaslt.h"

#include <dlfcn.h>

#include <string>
#include <vector>

#include "runtime/errors.h"
#include "shims/libs/dynamic_library.h"

namespace aotirt {
namespace cublaslt {
namespace {

bool resolve(void* handle, Api* api, std::string* why) {
  const bool all = libs::resolve_all(
      handle,
      {
          {"cublasLtCreate", reinterpret_cast<void**>(&api->create)},
          {"cublasLtMatmulDescCreate", reinterpret_cast<void**>(&api->desc_create)},
          {"cublasLtMatmulDescDestroy", reinterpret_cast<void**>(&api->desc_destroy)},
          {"cublasLtMatmulDescSetAttribute", reinterpret_cast<void**>(&api->desc_set)},
          {"cublasLtMatrixLayoutCreate", reinterpret_cast<void**>(&api->layout_create)},
          {"cublasLtMatrixLayoutDestroy", reinterpret_cast<void**>(&api->layout_destroy)},
          {"cublasLtMatmulPreferenceCreate", reinterpret_cast<void**>(&api->pref_create)},
          {"cublasLtMatmulPreferenceDestroy", reinterpret_cast<void**>(&api->pref_destroy)},
          {"cublasLtMatmulPreferenceSetAttribute", reinterpret_cast<void**>(&api->pref_set)},
          {"cublasLtMatmulAlgoGetHeuristic", reinterpret_cast<void**>(&api->heuristic)},
          {"cublasLtMatmul", reinterpret_cast<void**>(&api->matmul)},
      },
      "not a cuBLASLt library, or one older than 11", why);
  if (!all) return false;
  api->status_string = reinterpret_cast<const char* (*)(Status)>(dlsym(handle, "cublasLtGetStatusString"));
  return true;
}

libs::LazyLibrary<Api>& library() {
  // Never destroyed: shims may run during exit.
  static auto* lib = new libs::LazyLibrary<Api>(
      libs::LibrarySpec{
          "cuBLASLt",
          "AOTIRT_CUBLASLT",
          {"nvidia/cu13/lib/libcublasLt.so.13", "nvidia/cublas/lib/libcublasLt.so.12"},
          {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"},
          "Install cuBLAS (which ships cuBLASLt): `pip install nvidia-cublas` (CUDA 13) or "
          "`pip install nvidia-cublas-cu12` (CUDA 12) in this Python environment, or the CUDA toolkit's "
          "libcublasLt where the dynamic linker finds it",
      },
      &resolve);
  return *lib;
}

struct Mine {
  int device;
  Handle handle;
};

// A thread's handles, one per device. cublasLtCreate allocates no device
// memory and a handle is never destroyed, so a finished thread's handles
// are simply left (a few bytes each).
thread_local std::vector<Mine> thread_handles;

}  // namespace

aotirt_status api(const char* who, const Api** out) { return library().get(who, out); }

aotirt_status thread_handle(const char* who, int device, Handle* out) {
  for (const Mine& h : thread_handles)
    if (h.device == device) {
      *out = h.handle;
      return AOTIRT_OK;
    }
  const Api* lt = nullptr;
  AOTIRT_TRY(api(who, &lt));
  Handle handle = nullptr;
  AOTIRT_TRY(check(*lt, who, "cublasLtCreate", lt->create(&handle)));
  thread_handles.push_back({device, handle});
  *out = handle;
  return AOTIRT_OK;
}

aotirt_status check(const Api& lt, const char* who, const char* call, Status status) {
  if (status == cublas::kSuccess) return AOTIRT_OK;
  std::string message = std::string(who) + ": " + call + " failed: cuBLAS status " + std::to_string(status);
  if (lt.status_string) {
    const char* description = lt.status_string(status);
    if (description && *description) message += std::string(" (") + description + ")";
  }
  return fail(AOTIRT_ERROR_AOTI, message);
}

}  // namespace cublaslt
}  // namespace aotirt
