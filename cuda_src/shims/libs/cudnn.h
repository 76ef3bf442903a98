// cuDNN, opened with dlopen the first time a shim needs it (a CUDA
// convolution, or attention that cuDNN's fused kernels take): never at import
// and never for a model that calls neither. aotirt does not link cuDNN, and
// this header does not need cuDNN's: the few entry points called directly
// are declared here; everything else goes through cudnn-frontend, built with
// NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING, which resolves cuDNN's symbols from
// the handle opened here (cudnn_frontend::cudnn_dlhandle).
//
// Search (dynamic_library.h): the file AOTIRT_CUDNN names, alone when set;
// else <site-packages>/nvidia/cudnn/lib/libcudnn.so.9 (the nvidia-cudnn-cu13
// and nvidia-cudnn-cu12 wheels both put it there) in each site-packages
// folder aotirt knows; else libcudnn.so.9 through the dynamic linker.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>

#include "aotirt/aotirt.h"

struct cudnnContext;  // cuDNN's handle type (cudnn_graph.h)

namespace aotirt {

// AOTIRT_LOG=debug: the shims say on stderr, once per plan as they make it,
// which path runs a call (cuDNN and its engine, or a fallback, and why).
bool debug_logging();
void debug_log(const std::string& line);

namespace cudnn {

using Handle = ::cudnnContext*;  // cudnnHandle_t
using Status = int;                   // cudnnStatus_t: CUDNN_STATUS_SUCCESS is 0

struct Library {
  std::string path;    // the file that was opened
  size_t version = 0;  // cudnnGetVersion(): major * 10000 + minor * 100 + patch (cuDNN 9)
  Status (*create)(Handle*) = nullptr;                      // cudnnCreate
  Status (*set_stream)(Handle, cudaStream_t) = nullptr;     // cudnnSetStream
  const char* (*error_string)(Status) = nullptr;            // cudnnGetErrorString
  void (*last_error_string)(char*, size_t) = nullptr;       // cudnnGetLastErrorString (9.0+)
};

// The loaded library, opening it on the first call (thread-safe; a failure
// is final for the process). The message of a failure starts with `who`,
// names every file tried and says how to install cuDNN.
aotirt_status load(const char* who, const Library** out);
// Whether load() has run in this process (successfully or not): a later
// load() only reports its outcome, without opening anything.
bool load_attempted();

// What a context keeps per key: a built plan, or the note that cuDNN
// declined the problem.
struct Cached {
  virtual ~Cached() = default;
};

// One cuDNN handle of one device, used by one thread at a time (cuDNN
// handles must not be used concurrently), and the plans built with it (a
// plan is executed only with the handle it was built with).
struct Context {
  int device = 0;
  int sm_version = 0;  // the device's compute capability, major * 10 + minor
  Handle handle = nullptr;
  std::unordered_map<std::string, std::unique_ptr<Cached>> plans;
  // The stream the handle was last set to: cudnnSetStream is called only
  // when it changes (each call asks CUDA for the stream's priority and the
  // device's range, two host calls per convolution otherwise).
  cudaStream_t stream = nullptr;
  bool stream_set = false;
};

// The calling thread's context for `device` (which must be current), with
// its handle's stream set to `stream`. Made on first use (cudnnCreate, which
// is refused while `stream` is being captured into a CUDA graph). Never
// destroyed (cudnnDestroy waits for the device): a thread that ends leaves
// its contexts, plans included, to the next threads.
aotirt_status thread_context(const char* who, int device, cudaStream_t stream, Context** out);

// AOTIRT_OK for CUDNN_STATUS_SUCCESS, else AOTIRT_ERROR_AOTI naming `who`,
// the call, cuDNN's status and its last error message.
aotirt_status check(const char* who, const char* call, Status status);

// AOTIRT_ERROR_AOTI when `stream` is being captured into a CUDA graph:
// `what` (building a plan, creating a handle) waits and allocates, which a
// capture cannot record, so it must have happened in an eager run first.
aotirt_status refuse_while_capturing(const char* who, cudaStream_t stream, const std::string& what);

// Whether float32 convolutions may use TF32 tensor cores: torch's default
// (torch.backends.cudnn.allow_tf32 = True) unless AOTIRT_CUDNN_ALLOW_TF32=0,
// or as aotirt_set_cudnn_allow_tf32 last set it.
bool allow_tf32();

}  // namespace cudnn
}  // namespace aotirt
