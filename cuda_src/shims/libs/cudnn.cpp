#include "shims/libs/cudnn.h"

#include <dlfcn.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "shims/libs/cublas.h"
#include "runtime/entry.h"
#include "runtime/errors.h"
#include "runtime/stream.h"
#include "shims/libs/dynamic_library.h"

// cudnn-frontend, built with NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING, calls
// cuDNN through dlsym on this handle (its headers declare it; the program
// defines it). Set once cuDNN is loaded, before any frontend call.
namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;
}

namespace aotirt {

bool debug_logging() {
  static const bool enabled = [] {
    const char* level = std::getenv("AOTIRT_LOG");
    if (!level) return false;
    std::string v = level;
    for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return v == "debug";
  }();
  return enabled;
}

void debug_log(const std::string& line) {
  if (!debug_logging()) return;
  const std::string text = "aotirt: " + line + "\n";
  std::fputs(text.c_str(), stderr);  // one write per line: lines of threads do not interleave
}

namespace cudnn {
namespace {

constexpr size_t kMinimumVersion = 90000;

struct Loaded {
  std::mutex mutex;
  std::atomic<bool> tried{false};
  Library library;
  std::string error;  // why loading failed; empty once it succeeded
  std::atomic<const Library*> ready{nullptr};
};

Loaded& loaded() {
  static Loaded* l = new Loaded();  // never destroyed: shims may run during exit
  return *l;
}

template <typename Fn>
bool resolve(void* handle, const char* name, Fn* slot, std::string* why) {
  *slot = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*slot) return true;
  *why = std::string("has no ") + name + " (not a cuDNN library)";
  return false;
}

// cuDNN 9 numbers its versions major * 10000 + minor * 100 + patch, cuDNN 8
// and older major * 1000 + minor * 100 + patch.
std::string version_text(size_t v) {
  const size_t major = v >= 90000 ? v / 10000 : v / 1000;
  const size_t minor = v >= 90000 ? v / 100 % 100 : v / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

// The folder of a file's path, with its trailing slash ("" for a bare name).
std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

// cuDNN's runtime-compiled engines open libnvrtc.so.<CUDA major> by name,
// and their library's run path looks beside a wheel's cuDNN first
// (nvidia/cudnn/lib/../../cu<major>/lib, ../../cuda_nvrtc/lib): a cuDNN wheel
// compiles with the NVRTC of its own install, as it does in torch's process.
// A library opened here first, by name, would take that choice from it (the
// dynamic linker hands cuDNN whatever it already holds under that soname):
// on a machine with the CUDA toolkit on the linker's path, the toolkit's
// NVRTC, which compiles the same engines into other, slower code (session
// 36: the same attention kernel 0.1 to 0.5 us slower a call). So NVRTC is
// opened here in cuDNN's own order: one the process already holds; the one
// beside this cuDNN; by soname; a wheel's anywhere on Python's path (a
// cuDNN from AOTIRT_CUDNN or the system, with NVRTC in a wheel). None
// found is no error: cuDNN still has its precompiled engines.
void* open_nvrtc(const std::string& soname, const std::string& major, const std::string& cudnn_path) {
  if (void* held = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) return held;
  auto open_file = [](const std::string& file) {
    void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) debug_log("cuDNN: NVRTC from " + file);
    return handle;
  };
  const std::string dir = folder_of(cudnn_path);
  if (!dir.empty())
    for (const std::string& beside : {dir + "../../cu" + major + "/lib/", dir + "../../cuda_nvrtc/lib/", dir})
      if (void* handle = open_file(beside + soname)) return handle;
  if (void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
  for (const std::string& site : libs::site_packages_dirs())
    for (const std::string& wheel_dir : {"/nvidia/cu" + major + "/lib/", std::string("/nvidia/cuda_nvrtc/lib/")})
      if (void* handle = open_file(site + wheel_dir + soname)) return handle;
  return nullptr;
}

// NVRTC compiles against libnvrtc-builtins.so.<major>.<minor>, which it
// opens by name when it first compiles. On the GPU machines that name found
// the toolkit's builtins on the linker's path rather than the ones beside
// the wheel's NVRTC that cuDNN uses (session 37, /proc/self/maps), and the
// attention kernels compiled that way ran up to 0.5 us a call slower than
// torch's, whose process maps the wheel's. So the builtins beside the NVRTC
// in use are opened here first; the dynamic linker then hands NVRTC that
// copy, by its soname. None found is no error: NVRTC then finds its own.
void preload_nvrtc_builtins(void* nvrtc_handle) {
  using VersionFn = int (*)(int*, int*);
  auto version = reinterpret_cast<VersionFn>(dlsym(nvrtc_handle, "nvrtcVersion"));
  int major = 0, minor = 0;
  if (!version || version(&major, &minor) != 0) return;
  const std::string builtins = "libnvrtc-builtins.so." + std::to_string(major) + "." + std::to_string(minor);
  if (dlopen(builtins.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) return;
  const std::string dir = folder_of(libs::file_of(reinterpret_cast<const void*>(version)));
  if (dir.empty()) return;
  const std::string beside = dir + builtins;
  if (dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL)) debug_log("cuDNN: NVRTC's builtins from " + beside);
}

void preload_nvrtc(void* cudnn_handle, const std::string& cudnn_path) {
  size_t cudart = 0;
  if (auto get = reinterpret_cast<size_t (*)()>(dlsym(cudnn_handle, "cudnnGetCudartVersion"))) cudart = get();
  const std::string major = std::to_string(cudart ? cudart / 1000 : 13);
  const std::string soname = "libnvrtc.so." + major;
  void* nvrtc = open_nvrtc(soname, major, cudnn_path);
  if (!nvrtc) {
    debug_log("cuDNN: " + soname + " not found; cuDNN's runtime-compiled engines are unavailable");
    return;
  }
  preload_nvrtc_builtins(nvrtc);
}

void open_library(Loaded& l) {
  const libs::LibrarySpec spec{
      "cuDNN",
      "AOTIRT_CUDNN",
      {"nvidia/cudnn/lib/libcudnn.so.9"},
      {"libcudnn.so.9"},
      "Install it: `pip install nvidia-cudnn-cu13` (nvidia-cudnn-cu12 for CUDA 12; or `pip install aotirt[cudnn]`)"};
  Library lib;
  auto accept = [&](void* handle, std::string* why) {
    size_t (*get_version)() = nullptr;
    if (!resolve(handle, "cudnnGetVersion", &get_version, why) || !resolve(handle, "cudnnCreate", &lib.create, why) ||
        !resolve(handle, "cudnnSetStream", &lib.set_stream, why) ||
        !resolve(handle, "cudnnGetErrorString", &lib.error_string, why))
      return false;
    lib.last_error_string = reinterpret_cast<void (*)(char*, size_t)>(dlsym(handle, "cudnnGetLastErrorString"));
    lib.version = get_version();
    if (lib.version < kMinimumVersion) {
      *why = "is cuDNN " + version_text(lib.version) + "; aotirt needs cuDNN 9.0 or newer";
      return false;
    }
    lib.path = libs::file_of(reinterpret_cast<const void*>(get_version));
    return true;
  };
  std::string opened;
  void* handle = libs::open_first(spec, accept, &opened, &l.error);
  if (!handle) return;
  if (lib.path.empty()) lib.path = opened;
  cudnn_frontend::cudnn_dlhandle = handle;
  preload_nvrtc(handle, lib.path);
  l.library = lib;
  l.error.clear();
  debug_log("cuDNN " + version_text(lib.version) + " from " + lib.path);
}

// Contexts per (thread, device), as cuBLAS's handles are (cublas.cpp): a
// thread's contexts go to the pool when it ends, for later threads.
std::mutex& pool_mutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}

std::vector<Context*>& pool() {
  static std::vector<Context*>* p = new std::vector<Context*>();
  return *p;
}

struct ThreadContexts {
  std::vector<Context*> mine;
  ~ThreadContexts() {
    std::lock_guard<std::mutex> lock(pool_mutex());
    pool().insert(pool().end(), mine.begin(), mine.end());
  }
};

thread_local ThreadContexts thread_contexts;

std::atomic<int> tf32_setting{-1};  // -1: not read from the environment yet

}  // namespace

aotirt_status load(const char* who, const Library** out) {
  Loaded& l = loaded();
  if (const Library* ready = l.ready.load(std::memory_order_acquire)) {
    *out = ready;
    return AOTIRT_OK;
  }
  std::lock_guard<std::mutex> lock(l.mutex);
  if (!l.tried.load(std::memory_order_relaxed)) {
    open_library(l);
    if (l.error.empty()) l.ready.store(&l.library, std::memory_order_release);
    l.tried.store(true, std::memory_order_release);
  }
  if (!l.error.empty()) return fail(AOTIRT_ERROR_AOTI, std::string(who) + ": " + l.error);
  *out = &l.library;
  return AOTIRT_OK;
}

bool load_attempted() { return loaded().tried.load(std::memory_order_acquire); }

aotirt_status check(const char* who, const char* call, Status status) {
  if (status == 0) return AOTIRT_OK;
  std::string message = std::string(who) + ": " + call + " failed: ";
  const Library* lib = loaded().ready.load(std::memory_order_acquire);
  const char* name = lib ? lib->error_string(status) : nullptr;
  message += (name && *name ? std::string(name) : "cuDNN status") + " (" + std::to_string(status) + ")";
  if (lib && lib->last_error_string) {
    char detail[1024] = {};
    lib->last_error_string(detail, sizeof(detail));
    if (detail[0]) message += std::string(": ") + detail;
  }
  return fail(AOTIRT_ERROR_AOTI, message);
}

aotirt_status refuse_while_capturing(const char* who, cudaStream_t stream, const std::string& what) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  AOTIRT_CUDA_TRY(cudaStreamIsCapturing(stream, &capture));
  if (capture == cudaStreamCaptureStatusNone) return AOTIRT_OK;
  return fail(AOTIRT_ERROR_AOTI,
              std::string(who) + ": cannot " + what + " while a CUDA graph is being captured (it allocates and " +
                  "waits, which a capture cannot record): run the model eagerly once with these shapes first " +
                  "(CudaHandle.capture's warm-up runs do)");
}

aotirt_status thread_context(const char* who, int device, cudaStream_t stream, Context** out) {
  Context* found = nullptr;
  for (Context* c : thread_contexts.mine)
    if (c->device == device) found = c;
  if (!found) {
    std::lock_guard<std::mutex> lock(pool_mutex());
    std::vector<Context*>& free = pool();
    for (size_t i = 0; i < free.size(); ++i)
      if (free[i]->device == device) {
        found = free[i];
        free.erase(free.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
  }
  // Neither loading cuDNN nor making a handle belongs in a capture.
  if (!found) AOTIRT_TRY(refuse_while_capturing(who, stream, "load cuDNN or create a cuDNN handle"));
  const Library* lib = nullptr;
  AOTIRT_TRY(load(who, &lib));
  if (!found) {
    std::unique_ptr<Context> made(new Context());
    made->device = device;
    AOTIRT_TRY(compute_capability(device, &made->sm_version));
    // Once per thread and device: cuDNN sets up its device state here.
    AOTIRT_TRY(check(who, "cudnnCreate", lib->create(&made->handle)));
    found = made.release();
  }
  // A context taken from the pool is this thread's from now on.
  bool listed = false;
  for (Context* c : thread_contexts.mine) listed = listed || c == found;
  if (!listed) thread_contexts.mine.push_back(found);
  if (!found->stream_set || found->stream != stream) {
    found->stream_set = false;  // until cuDNN has taken it
    AOTIRT_TRY(check(who, "cudnnSetStream", lib->set_stream(found->handle, stream)));
    found->stream = stream;
    found->stream_set = true;
  }
  *out = found;
  return AOTIRT_OK;
}

bool allow_tf32() {
  int v = tf32_setting.load(std::memory_order_relaxed);
  if (v >= 0) return v != 0;
  const char* env = std::getenv("AOTIRT_CUDNN_ALLOW_TF32");
  std::string s = env ? env : "";
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  v = (s == "0" || s == "false" || s == "no" || s == "off") ? 0 : 1;
  int unset = -1;
  tf32_setting.compare_exchange_strong(unset, v);  // a concurrent aotirt_set_cudnn_allow_tf32 wins
  return tf32_setting.load(std::memory_order_relaxed) != 0;
}

}  // namespace cudnn
}  // namespace aotirt

extern "C" AOTIRT_API aotirt_status aotirt_set_cudnn_allow_tf32(int allow) {
  AOTIRT_ENTRY();
  aotirt::cudnn::tf32_setting.store(allow ? 1 : 0, std::memory_order_relaxed);
  return AOTIRT_OK;
}

extern "C" AOTIRT_API int aotirt_cudnn_allow_tf32(void) {
  AOTIRT_ENTRY();
  return aotirt::cudnn::allow_tf32() ? 1 : 0;
}

extern "C" AOTIRT_API aotirt_status aotirt_load_optional_library(const char* name, const char** path_out) {
  AOTIRT_ENTRY();
  const std::string which = name ? name : "";
  if (which == "cudnn") {
    const aotirt::cudnn::Library* lib = nullptr;
    AOTIRT_TRY(aotirt::cudnn::load("aotirt_load_optional_library", &lib));
    if (path_out) *path_out = lib->path.c_str();
    return AOTIRT_OK;
  }
  if (which == "cublas") {
    const aotirt::cublas::Api* api = nullptr;
    AOTIRT_TRY(aotirt::cublas::api("aotirt_load_optional_library", &api));
    // The file behind the name the loader opened, found once (the library
    // stays loaded, so the path never changes).
    static const std::string* path =
        new std::string(aotirt::libs::file_of(reinterpret_cast<const void*>(api->create)));
    if (path_out) *path_out = path->c_str();
    return AOTIRT_OK;
  }
  return aotirt::fail(AOTIRT_ERROR_VALUE,
                      "aotirt_load_optional_library: unknown library \"" + which + "\" (cublas or cudnn)");
}
