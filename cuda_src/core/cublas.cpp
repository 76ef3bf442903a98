#include "cublas.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "errors.h"

namespace aotirt {
namespace cublas {
namespace {

struct Library {
  std::mutex mutex;
  bool tried = false;
  Api api;
  std::string error;  // why loading failed; empty once it succeeded
  std::atomic<const Api*> ready{nullptr};  // &api once loaded
};

Library& library() {
  static Library* lib = new Library();  // never destroyed: shims may run during exit
  return *lib;
}

// Resolves every entry point from `handle`; false (and `missing` set) when
// the file lacks a required one.
bool resolve(void* handle, Api* api, std::string* missing) {
  struct Entry {
    const char* name;
    void** slot;
  } entries[] = {
      {"cublasCreate_v2", reinterpret_cast<void**>(&api->create)},
      {"cublasSetStream_v2", reinterpret_cast<void**>(&api->set_stream)},
      {"cublasGemmEx", reinterpret_cast<void**>(&api->gemm)},
      {"cublasGemmStridedBatchedEx", reinterpret_cast<void**>(&api->gemm_strided_batched)},
  };
  for (const Entry& e : entries) {
    *e.slot = dlsym(handle, e.name);
    if (!*e.slot) {
      *missing = e.name;
      return false;
    }
  }
  api->status_string = reinterpret_cast<const char* (*)(Status)>(dlsym(handle, "cublasGetStatusString"));
  return true;
}

// Opens the first usable candidate into lib.api, or fills lib.error.
void load(Library& lib) {
  const char* configured = std::getenv("AOTIRT_CUBLAS");
  const bool from_env = configured && *configured;
  std::vector<std::string> candidates;
  if (from_env && !std::strchr(configured, '/')) {
    // A bare name would make dlopen search the library path for it: not the
    // file the user named. A path is what the variable takes.
    lib.error = "AOTIRT_CUBLAS=" + std::string(configured) + " is not a path (it has no '/'): dlopen would "
                "search the library path for it. Set it to the full path of libcublas.so.13 or libcublas.so.12 "
                "(./libcublas.so.13 for one in the working folder), or unset it";
    return;
  }
  if (from_env)
    candidates.push_back(configured);
  else
    candidates = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};

  std::string tried;
  for (const std::string& candidate : candidates) {
    dlerror();
    // Local: cuBLAS's symbols must not take part in resolving the models'.
    void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    std::string reason;
    if (!handle) {
      const char* message = dlerror();
      reason = message ? message : candidate + ": could not be opened";
    } else {
      std::string missing;
      Api api;
      if (resolve(handle, &api, &missing)) {
        api.path = candidate;
        lib.api = api;  // `handle` stays open for the life of the process
        lib.error.clear();
        return;
      }
      reason = candidate + ": has no " + missing + " (not a cuBLAS library, or one older than 11)";
      dlclose(handle);
    }
    tried += (tried.empty() ? "" : "; ") + reason;
  }
  if (from_env) {
    lib.error = "cuBLAS could not be loaded from AOTIRT_CUBLAS=" + std::string(configured) + " (" + tried +
                "). Set AOTIRT_CUBLAS to the full path of libcublas.so.13 or libcublas.so.12, or unset it to "
                "search libcublas.so.13, libcublas.so.12 and libcublas.so";
  } else {
    lib.error = "cuBLAS could not be loaded; tried libcublas.so.13, libcublas.so.12 and libcublas.so (" + tried +
                "). Install cuBLAS where the dynamic linker finds it (the CUDA toolkit's libcublas, or "
                "`pip install nvidia-cublas` and its lib folder on LD_LIBRARY_PATH), or set AOTIRT_CUBLAS to "
                "the full path of libcublas.so.13 or libcublas.so.12";
  }
}

const char* status_name(Status status) {
  switch (status) {
    case 0: return "CUBLAS_STATUS_SUCCESS";
    case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
    case 7: return "CUBLAS_STATUS_INVALID_VALUE";
    case 8: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case 11: return "CUBLAS_STATUS_MAPPING_ERROR";
    case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case 16: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "CUBLAS_STATUS_UNKNOWN";
  }
}

// Handles are per (thread, device), as cuBLAS recommends for threads sharing
// a device. Destroying one would wait for the whole device (cublasDestroy
// synchronizes), so none is ever destroyed: a finishing thread puts its
// handles here and a later thread takes them, so their number stays at the
// most threads that ever ran matmuls at once.
struct Pooled {
  int device;
  Handle handle;
};

std::mutex& pool_mutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}

std::vector<Pooled>& pool() {
  static std::vector<Pooled>* p = new std::vector<Pooled>();
  return *p;
}

struct ThreadHandles {
  std::vector<Pooled> mine;
  ~ThreadHandles() {
    std::lock_guard<std::mutex> lock(pool_mutex());
    pool().insert(pool().end(), mine.begin(), mine.end());
  }
};

thread_local ThreadHandles thread_handles;

}  // namespace

aotirt_status api(const char* who, const Api** out) {
  Library& lib = library();
  // Every CUDA matmul asks: once loaded, the answer is one atomic load.
  if (const Api* ready = lib.ready.load(std::memory_order_acquire)) {
    *out = ready;
    return AOTIRT_OK;
  }
  std::lock_guard<std::mutex> lock(lib.mutex);
  if (!lib.tried) {
    lib.tried = true;
    load(lib);
    if (lib.error.empty()) lib.ready.store(&lib.api, std::memory_order_release);
  }
  if (!lib.error.empty()) return fail(AOTIRT_ERROR_AOTI, std::string(who) + ": " + lib.error);
  *out = &lib.api;
  return AOTIRT_OK;
}

aotirt_status thread_handle(const char* who, int device, Handle* out) {
  for (const Pooled& h : thread_handles.mine)
    if (h.device == device) {
      *out = h.handle;
      return AOTIRT_OK;
    }
  Pooled found{device, nullptr};
  {
    std::lock_guard<std::mutex> lock(pool_mutex());
    std::vector<Pooled>& free = pool();
    for (size_t i = 0; i < free.size(); ++i)
      if (free[i].device == device) {
        found = free[i];
        free.erase(free.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
  }
  if (!found.handle) {
    const Api* cublas = nullptr;
    AOTIRT_TRY(api(who, &cublas));
    // Once per thread and device: cuBLAS allocates its workspace here.
    AOTIRT_TRY(check(*cublas, who, "cublasCreate_v2", cublas->create(&found.handle)));
  }
  thread_handles.mine.push_back(found);
  *out = found.handle;
  return AOTIRT_OK;
}

aotirt_status check(const Api& cublas, const char* who, const char* call, Status status) {
  if (status == kSuccess) return AOTIRT_OK;
  std::string message = std::string(who) + ": " + call + " failed: " + status_name(status) + " (" +
                        std::to_string(status) + ")";
  if (cublas.status_string) {
    const char* description = cublas.status_string(status);
    if (description && *description) message += std::string(": ") + description;
  }
  return fail(AOTIRT_ERROR_AOTI, message);
}

}  // namespace cublas
}  // namespace aotirt

extern "C" aotirt_status aotirt_cublas_load(void) {
  const aotirt::cublas::Api* api = nullptr;
  return aotirt::cublas::api("aotirt_cublas_load", &api);
}
