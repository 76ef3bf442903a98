// Streams: the per-device shared stream, owned and adopted streams, and the
// thread's current stream that the shims read.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <mutex>

#include "aotirt/aotirt.h"
#include "runtime/block_cache.h"
#include "runtime/ref.h"

namespace aotirt {
class CaptureState;  // graph_memory.h
}

// The C API's opaque aotirt_stream is this class.
struct aotirt_stream : aotirt::RefCounted {
  cudaStream_t handle = nullptr;
  int device = 0;
  bool owned = false;   // destroyed by aotirt when the last reference goes
  bool shared = false;  // the device's shared stream: leaves the registry when it dies
  // An adopted stream's owner, told when the last reference is gone (so that
  // it keeps the stream alive while aotirt may still record events on it).
  void (*release)(void*) = nullptr;
  void* release_ctx = nullptr;
  // Set while a CUDA graph is captured on this stream (graph.cpp): then its
  // allocations and frees become nodes of the graph (graph_memory.h).
  std::atomic<aotirt::CaptureState*> capture{nullptr};

  // One class, no subclasses: streams are deleted through this type.
  ~aotirt_stream();

  // Makes `waiter` wait, on the device, for the work queued on this stream so
  // far. No host wait. A capturing `waiter` waits through its capture instead
  // (CaptureState::wait_before_launch); work captured on this stream cannot
  // be waited for outside its capture (an error).
  aotirt_status order_before(aotirt_stream* waiter);
  // order_before for destructors, which cannot report and must leave the
  // thread's last error alone: an ordering order_before would refuse is
  // skipped, and a CUDA call that fails is ignored (it means the context is
  // broken, and with it the work there was to wait for).
  void order_before_quietly(aotirt_stream* waiter);

  // Device memory for this stream's allocations, taken from the pool in
  // segments and reused as they are freed (block_cache.h); nullptr where
  // the stream keeps none, and each allocation goes to the pool. Streams
  // aotirt owns keep one. An adopted stream keeps one from the time a handle
  // opens on it (keep_cache): its caller has promised the stream outlives
  // this object, whose last reference drains the cache onto it. Other
  // adopted streams keep none: a shim's stream guard or an interop wait wraps
  // a stream for one call, with no such promise, and a conversion's wrapper
  // (asarray(x, stream=s)) lives with its tensor, whose segment would be a
  // cache's (2 MiB for any small tensor) rather than its own size.
  aotirt::BlockCache* cache() { return keeps_cache_.load(std::memory_order_relaxed) ? &cache_ : nullptr; }
  // From now on, blocks freed on this stream are cached. Blocks it gave out
  // before are not the cache's, and go back to the pool when freed (give()
  // refuses them). cudaStreamPerThread never caches: it names a different
  // stream on each thread, and a cache's blocks are ordered on one stream.
  void keep_cache();
  // A block allocated on this stream and freed: back to the cache where
  // there is one (the segments it lets go are freed to the pool), else freed
  // to the pool; all stream-ordered, no host wait. Errors are ignored, as
  // a destructor must (a failed free means a broken context).
  void recycle_block(void* block);
  // Frees the cache's wholly free segments to the pool, stream-ordered.
  void release_cached_blocks();

 private:
  // How `waiter` is ordered after this stream, given the captures of both
  // (order_before says why); `waiting_capture` receives the waiter's.
  enum class Ordering { None, Refused, AtLaunch, Event };
  Ordering ordering_for(const aotirt_stream& waiter, aotirt::CaptureState** waiting_capture) const;

  aotirt::BlockCache cache_;
  std::atomic<bool> keeps_cache_{false};
  std::mutex event_mutex_;
  cudaEvent_t order_event_ = nullptr;  // reused: a wait captures the record at call time
};

namespace aotirt {

using Stream = aotirt_stream;
using StreamRef = Ref<Stream>;

// AOTIRT_OK when `device` is a CUDA device of this machine; else
// AOTIRT_ERROR_VALUE naming it and how many there are (a clear error, where
// cudaSetDevice would only say cudaErrorInvalidDevice). The count is read
// once per process: CUDA fixes it at initialisation.
aotirt_status check_cuda_device(int device);

// What shims ask of a device on every call (a path by architecture, a grid
// that fills the device), asked of CUDA once per device and kept.
struct DeviceFacts {
  int sm_version = 0;                  // major * 10 + minor (90 for an H200)
  int multiprocessors = 0;
  int threads_per_multiprocessor = 0;  // resident at once, at most
};
aotirt_status device_facts(int device, DeviceFacts* out);

// device_facts' sm_version.
aotirt_status compute_capability(int device, int* sm_version);

aotirt_status shared_stream(int device, StreamRef* out);
aotirt_status create_stream(int device, StreamRef* out);
StreamRef adopt_stream(cudaStream_t handle, int device);

// A new event recorded on `stream` (any device) after the work queued there
// so far, or nullptr when CUDA refuses. Raw CUDA calls, no fail(): for
// destructors, which must leave the thread's last error alone.
cudaEvent_t record_event_quietly(const Stream& stream);

// The thread's current stream: set by a handle for the duration of a run and
// by the shims' stream guards. nullptr when none is set.
Stream* current_stream();
void set_current_stream(Stream* stream);

// The stream a new CUDA tensor of `device` belongs to: `stream`, which must
// be on that device, or the device's shared stream when `stream` is null.
aotirt_status stream_or_shared(Stream* stream, int device, StreamRef* out);

// `preferred` when it is a stream of `device`, else the device's shared stream.
aotirt_status stream_on_device(Stream* preferred, int device, StreamRef* out);

// The stream a CUDA allocation on `device` should be ordered on right now:
// the current stream when it is on that device, else the shared stream
// (stream_on_device with the current stream).
aotirt_status stream_for_device(int device, StreamRef* out);

// Makes `previous` the thread's current device again, after work on another
// one. Restoring a device nobody in the process has used yet would create its
// CUDA context (cudaSetDevice does, since CUDA 12): hundreds of MiB on a GPU
// that a thread running elsewhere never asked for. Such a device is left
// alone, and the thread stays on the device it ran on (torch's device guard
// does the same). Errors are ignored: this runs on error paths and in
// destructors, and leaves the thread's last error alone.
void restore_device(int previous);

// Makes `device` current for a scope and restores the previous one
// (restore_device).
class DeviceGuard {
 public:
  DeviceGuard() = default;
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  ~DeviceGuard();
  aotirt_status enter(int device);

 private:
  int previous_ = -1;
};

// Raises the release threshold of the device's default memory pool once, so
// that memory freed stream-ordered stays in the pool for the next run instead
// of going back to the driver (which would cost a sync-like round trip).
aotirt_status configure_pool(int device);

}  // namespace aotirt
