// Libraries the shims open with dlopen the first time a model needs them
// (cuBLAS, cuDNN): aotirt never links them (most models never call those
// shims, and they are large) and never opens them at import.
//
// The candidates, in order (candidates()):
// 1. the file named by the library's environment variable when it is set,
//    and nothing else: a wrong setting is reported, not silently replaced;
// 2. the pip wheels' copies (nvidia-cublas and the like) under each
//    site-packages folder of the process, found without Python: the folders
//    that loaded libraries live in (libaotirt's own first, then numpy's,
//    cuda-bindings', ... in load order), then those the Python side
//    registered with aotirt_set_wheel_dirs (an editable install's libaotirt
//    lies outside site-packages, and nothing of a wheel may be loaded yet);
// 3. the sonames, through the dynamic linker (libaotirt's RUNPATH holds the
//    CUDA toolkit's lib directory).
// Each is opened RTLD_NOW | RTLD_LOCAL (its symbols must not take part in
// resolving the models'). A failure names every file tried, why each was
// refused, and how to provide the library.
#pragma once

#include <atomic>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "aotirt/aotirt.h"
#include "runtime/errors.h"

namespace aotirt {
namespace libs {

struct LibrarySpec {
  std::string name;                      // "cuBLAS", for messages
  std::string env_var;                   // "AOTIRT_CUBLAS"
  std::vector<std::string> wheel_files;  // under a site-packages folder: "nvidia/cu13/lib/libcublas.so.13"
  std::vector<std::string> sonames;      // "libcublas.so.13", ..., "libcublas.so"
  std::string install_hint;              // "Install it: `pip install nvidia-cublas` ..."
};

// The site-packages (or dist-packages) folders that loaded libraries live
// in, libaotirt's own first, then those registered by aotirt_set_wheel_dirs.
std::vector<std::string> site_packages_dirs();

// The file a loaded symbol comes from (dladdr, resolved), or "" when unknown.
std::string file_of(const void* symbol);

// The files to try for `spec`, in order (see above); `from_env` tells
// whether the environment variable chose the one candidate.
std::vector<std::string> candidates(const LibrarySpec& spec, bool* from_env);

// Takes an opened file, or refuses it with the reason ("has no cublasGemmEx
// (...)"); it may keep what it resolves.
using Accept = std::function<bool(void* handle, std::string* why)>;

// One entry point a library must have, and where its address goes.
struct Symbol {
  const char* name;
  void** slot;
};

// Fills every slot from `handle`; false, with `why` naming the first missing
// entry point ("has no cublasGemmEx (not a cuBLAS library, or one older than
// 11)"), when the file lacks one. `what` is the parenthesised part.
bool resolve_all(void* handle, std::initializer_list<Symbol> symbols, const char* what, std::string* why);

// Opens the first candidate that `accept` takes; the handle stays open for
// the life of the process, and `path` receives the file's name. nullptr when
// none does, with `error` saying what was tried and how to provide it.
void* open_first(const LibrarySpec& spec, const Accept& accept, std::string* path, std::string* error);

// A library and the entry points `resolve` takes from it, opened the first
// time get() is called: once per process, and a failure is final (every
// later call reports it). Make one per library, never destroyed (shims may
// run during exit).
template <typename Api>
class LazyLibrary {
 public:
  using Resolve = bool (*)(void* handle, Api* api, std::string* why);
  LazyLibrary(LibrarySpec spec, Resolve resolve) : spec_(std::move(spec)), resolve_(resolve) {}

  // The resolved entry points. On failure AOTIRT_ERROR_AOTI, whose message
  // starts with `who` (the shim or C API function that asked).
  aotirt_status get(const char* who, const Api** out) {
    // Every call of a shim asks: once loaded, the answer is one atomic load.
    if (const Api* ready = ready_.load(std::memory_order_acquire)) {
      *out = ready;
      return AOTIRT_OK;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (!tried_) {
      tried_ = true;
      Api api{};
      auto accept = [&](void* handle, std::string* why) { return resolve_(handle, &api, why); };
      if (open_first(spec_, accept, &path_, &error_)) {
        api_ = api;
        ready_.store(&api_, std::memory_order_release);
      }
    }
    if (!error_.empty()) return fail(AOTIRT_ERROR_AOTI, std::string(who) + ": " + error_);
    *out = &api_;
    return AOTIRT_OK;
  }

  // The file that was opened (empty until then).
  std::string path() {
    std::lock_guard<std::mutex> lock(mutex_);
    return path_;
  }

 private:
  const LibrarySpec spec_;
  const Resolve resolve_;
  std::mutex mutex_;
  bool tried_ = false;
  Api api_{};
  std::string path_;
  std::string error_;  // why loading failed; empty unless it did
  std::atomic<const Api*> ready_{nullptr};
};

}  // namespace libs
}  // namespace aotirt
