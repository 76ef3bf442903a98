#include "shims/libs/cublas.h"

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/entry.h"
#include "runtime/errors.h"
#include "runtime/stream.h"
#include "shims/libs/cublas_workspace.h"
#include "shims/libs/dynamic_library.h"

namespace aotirt {
namespace cublas {
namespace {

// Resolves every entry point from `handle`; false (and `why` set) when the
// file lacks a required one.
bool resolve(void* handle, Api* api, std::string* why) {
  const bool all = libs::resolve_all(
      handle,
      {
          {"cublasCreate_v2", reinterpret_cast<void**>(&api->create)},
          {"cublasSetStream_v2", reinterpret_cast<void**>(&api->set_stream)},
          {"cublasGemmEx", reinterpret_cast<void**>(&api->gemm)},
          {"cublasGemmStridedBatchedEx", reinterpret_cast<void**>(&api->gemm_strided_batched)},
          {"cublasGemmBatchedEx", reinterpret_cast<void**>(&api->gemm_batched)},
      },
      "not a cuBLAS library, or one older than 11", why);
  if (!all) return false;
  api->status_string = reinterpret_cast<const char* (*)(Status)>(dlsym(handle, "cublasGetStatusString"));
  api->set_workspace = reinterpret_cast<Status (*)(Handle, void*, size_t)>(dlsym(handle, "cublasSetWorkspace_v2"));
  return true;
}

libs::LazyLibrary<Api>& library() {
  // Never destroyed: shims may run during exit.
  static auto* lib = new libs::LazyLibrary<Api>(
      libs::LibrarySpec{
          "cuBLAS",
          "AOTIRT_CUBLAS",
          // nvidia-cublas (CUDA 13), nvidia-cublas-cu12.
          {"nvidia/cu13/lib/libcublas.so.13", "nvidia/cublas/lib/libcublas.so.12"},
          {"libcublas.so.13", "libcublas.so.12", "libcublas.so"},
          "Install cuBLAS: `pip install nvidia-cublas` (CUDA 13) or `pip install nvidia-cublas-cu12` (CUDA 12) "
          "in this Python environment, or the CUDA toolkit's libcublas where the dynamic linker finds it",
      },
      &resolve);
  return *lib;
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

aotirt_status api(const char* who, const Api** out) { return library().get(who, out); }

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

namespace {
// What a handle of this thread was last bound to (bind_stream): the same
// stream and workspace block again (the stream's cache hands the block back
// call after call) need no cuBLAS call. Handles change threads only when a
// thread ends, and this goes with it.
struct Binding {
  Handle handle;
  cudaStream_t stream;
  void* workspace;
  size_t bytes;
};
thread_local std::vector<Binding> thread_bindings;
}  // namespace

aotirt_status bind_stream(const Api& cublas, const char* who, Handle handle, const StreamRef& stream,
                          StorageRef* workspace) {
  size_t bytes = 0;
  if (cublas.set_workspace) {  // a cuBLAS without it keeps its own pool
    static const char* const config = std::getenv("CUBLAS_WORKSPACE_CONFIG");  // read once, as cuBLAS does
    DeviceFacts facts;
    AOTIRT_TRY(device_facts(stream->device, &facts));
    bytes = workspace_bytes(facts.sm_version, config);
    if (bytes) AOTIRT_TRY(allocate_storage(bytes, AOTIRT_DEVICE_CUDA, stream->device, stream, workspace));
  }
  void* const block = bytes ? (*workspace)->data : nullptr;
  Binding* bound = nullptr;
  for (Binding& b : thread_bindings)
    if (b.handle == handle) bound = &b;
  if (!bound) {
    thread_bindings.push_back(Binding{handle, nullptr, nullptr, 0});
    bound = &thread_bindings.back();
    bound->stream = reinterpret_cast<cudaStream_t>(~uintptr_t{0});  // matches no stream: bind the first time
  }
  if (bound->stream == stream->handle && bound->workspace == block && bound->bytes == bytes) return AOTIRT_OK;
  bound->stream = reinterpret_cast<cudaStream_t>(~uintptr_t{0});  // unknown until both calls succeed
  // cublasSetStream puts the handle back on cuBLAS's own pool: the workspace is set after it.
  AOTIRT_TRY(check(cublas, who, "cublasSetStream_v2", cublas.set_stream(handle, stream->handle)));
  if (cublas.set_workspace)
    AOTIRT_TRY(check(cublas, who, "cublasSetWorkspace_v2", cublas.set_workspace(handle, block, bytes)));
  *bound = Binding{handle, stream->handle, block, bytes};
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
  AOTIRT_ENTRY();
  const aotirt::cublas::Api* api = nullptr;
  return aotirt::cublas::api("aotirt_cublas_load", &api);
}
