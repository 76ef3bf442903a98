#include "runtime/stream.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/errors.h"
#include "runtime/graph_memory.h"

namespace aotirt {
void forget_shared_stream(aotirt_stream* stream);

namespace {

// A new event of `device`, or nullptr when CUDA refuses. Raw CUDA calls, no
// fail(): for destructors, which must leave the thread's last error alone.
cudaEvent_t new_event_quietly(int device) {
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) return nullptr;
  // An event is recorded on streams of its own device only.
  if (previous != device && cudaSetDevice(device) != cudaSuccess) return nullptr;
  cudaEvent_t event = nullptr;
  if (cudaEventCreateWithFlags(&event, cudaEventDisableTiming) != cudaSuccess) event = nullptr;
  if (previous != device) restore_device(previous);
  return event;
}

// Whether `device`'s primary context exists: someone in the process has used
// the device. Asked of the driver, which cudart has loaded (no link to it);
// when it cannot say, the answer is yes (restore, as cudart alone would). A
// context that exists stays for the process: that answer is kept.
bool context_exists(int device) {
  constexpr int kMaxDevices = 256;
  static std::atomic<bool> known[kMaxDevices];
  if (device < 0 || device >= kMaxDevices) return true;
  if (known[device].load(std::memory_order_acquire)) return true;
  using DeviceGet = int (*)(int* device, int ordinal);                           // cuDeviceGet
  using PrimaryState = int (*)(int device, unsigned int* flags, int* active);    // cuDevicePrimaryCtxGetState
  static DeviceGet device_get = nullptr;
  static PrimaryState primary_state = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    if (void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD)) {
      device_get = reinterpret_cast<DeviceGet>(dlsym(driver, "cuDeviceGet"));
      primary_state = reinterpret_cast<PrimaryState>(dlsym(driver, "cuDevicePrimaryCtxGetState"));
    }
  });
  int handle = 0, active = 0;
  unsigned int flags = 0;
  if (!device_get || !primary_state || device_get(&handle, device) != 0 ||
      primary_state(handle, &flags, &active) != 0)
    return true;
  if (active) known[device].store(true, std::memory_order_release);
  return active != 0;
}

}  // namespace
}  // namespace aotirt

aotirt_stream::~aotirt_stream() {
  if (shared) aotirt::forget_shared_stream(this);
  // Before an adopted stream's owner is told (below): the stream-ordered
  // frees need the stream.
  if (cache()) release_cached_blocks();
  // Neither call waits: CUDA releases the resources once queued work is done.
  if (order_event_) cudaEventDestroy(order_event_);
  if (owned && handle) cudaStreamDestroy(handle);
  if (release) release(release_ctx);
}

void aotirt_stream::recycle_block(void* block) {
  std::vector<void*> released;
  aotirt::BlockCache* kept_by = cache();
  if (!kept_by || !kept_by->give(block, &released)) cudaFreeAsync(block, handle);
  for (void* segment : released) cudaFreeAsync(segment, handle);
}

void aotirt_stream::keep_cache() {
  if (handle != cudaStreamPerThread) keeps_cache_.store(true, std::memory_order_relaxed);
}

void aotirt_stream::release_cached_blocks() {
  std::vector<void*> segments;
  cache_.release_free_segments(&segments);
  for (void* segment : segments) cudaFreeAsync(segment, handle);
}

aotirt_stream::Ordering aotirt_stream::ordering_for(const aotirt_stream& waiter,
                                                   aotirt::CaptureState** waiting_capture) const {
  if (&waiter == this || waiter.handle == handle) return Ordering::None;
  *waiting_capture = waiter.capture.load(std::memory_order_acquire);
  aotirt::CaptureState* own_capture = capture.load(std::memory_order_acquire);
  // The event would be recorded into the graph, and a stream waiting for it
  // would be pulled into the capture.
  if (own_capture && own_capture != *waiting_capture) return Ordering::Refused;
  if (*waiting_capture && !own_capture) return Ordering::AtLaunch;
  return Ordering::Event;
}

aotirt_status aotirt_stream::order_before(aotirt_stream* waiter) {
  aotirt::CaptureState* waiting_capture = nullptr;
  switch (ordering_for(*waiter, &waiting_capture)) {
    case Ordering::None:
      return AOTIRT_OK;
    case Ordering::Refused:
      return aotirt::fail(AOTIRT_ERROR_VALUE, "work being captured into a CUDA graph cannot be waited for by "
                                              "a stream outside the capture");
    case Ordering::AtLaunch:
      waiting_capture->wait_before_launch(this);
      return AOTIRT_OK;
    case Ordering::Event:
      break;
  }
  std::lock_guard<std::mutex> lock(event_mutex_);
  if (!order_event_) {
    aotirt::DeviceGuard guard;  // an event is recorded on its own device's streams only
    AOTIRT_TRY(guard.enter(device));
    AOTIRT_CUDA_TRY(cudaEventCreateWithFlags(&order_event_, cudaEventDisableTiming));
  }
  AOTIRT_CUDA_TRY(cudaEventRecord(order_event_, handle));
  AOTIRT_CUDA_TRY(cudaStreamWaitEvent(waiter->handle, order_event_, 0));
  return AOTIRT_OK;
}

void aotirt_stream::order_before_quietly(aotirt_stream* waiter) {
  aotirt::CaptureState* waiting_capture = nullptr;
  switch (ordering_for(*waiter, &waiting_capture)) {
    case Ordering::None:
    case Ordering::Refused:
      return;
    case Ordering::AtLaunch:
      waiting_capture->wait_before_launch(this);
      return;
    case Ordering::Event:
      break;
  }
  std::lock_guard<std::mutex> lock(event_mutex_);
  if (!order_event_) order_event_ = aotirt::new_event_quietly(device);
  if (order_event_ && cudaEventRecord(order_event_, handle) == cudaSuccess)
    (void)cudaStreamWaitEvent(waiter->handle, order_event_, 0);
}

namespace aotirt {
namespace {

// Shared streams by device. The registry holds no reference: the stream dies
// with its last user, and the next user creates a fresh one.
std::mutex registry_mutex;
std::unordered_map<int, Stream*> shared_streams;

aotirt_status new_nonblocking_stream(int device, cudaStream_t* out) {
  DeviceGuard guard;
  AOTIRT_TRY(guard.enter(device));
  // Non-blocking: never implicitly ordered with the legacy default stream, so
  // a library that uses stream 0 cannot serialise our work behind its own.
  AOTIRT_CUDA_TRY(cudaStreamCreateWithFlags(out, cudaStreamNonBlocking));
  return AOTIRT_OK;
}

aotirt_status new_owned_stream(int device, bool shared, StreamRef* out) {
  cudaStream_t handle = nullptr;
  AOTIRT_TRY(new_nonblocking_stream(device, &handle));
  auto* stream = new Stream();
  stream->handle = handle;
  stream->device = device;
  stream->owned = true;
  stream->shared = shared;
  stream->keep_cache();
  *out = StreamRef::adopt(stream);
  return AOTIRT_OK;
}

thread_local Stream* tls_current_stream = nullptr;

}  // namespace

void forget_shared_stream(Stream* stream) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto it = shared_streams.find(stream->device);
  if (it != shared_streams.end() && it->second == stream) shared_streams.erase(it);
}

aotirt_status check_cuda_device(int device) {
  static std::atomic<int> known_count{-1};  // -1: not read yet (or the read failed: read again)
  int count = known_count.load(std::memory_order_acquire);
  if (count < 0) {
    cudaError_t err = cudaGetDeviceCount(&count);
    // No GPU reads as CUDA's own error, as every other CUDA call would say it.
    if (err == cudaSuccess && count == 0) err = cudaErrorNoDevice;
    if (err != cudaSuccess) return fail_cuda(err, "cudaGetDeviceCount, checking CUDA device " + std::to_string(device));
    known_count.store(count, std::memory_order_release);
  }
  if (device >= 0 && device < count) return AOTIRT_OK;
  std::string has = std::to_string(count);
  if (count == 1) has += ": cuda:0";
  if (count > 1) has += ": cuda:0 to cuda:" + std::to_string(count - 1);
  return fail(AOTIRT_ERROR_VALUE, "CUDA device " + std::to_string(device) + " does not exist (this machine has " +
                                      has + ")");
}

aotirt_status device_facts(int device, DeviceFacts* out) {
  constexpr int kKnownDevices = 64;
  static DeviceFacts known[kKnownDevices];
  static std::atomic<bool> ready[kKnownDevices] = {};
  static std::mutex asking;
  const bool cached = device >= 0 && device < kKnownDevices;
  if (cached && ready[device].load(std::memory_order_acquire)) {
    *out = known[device];
    return AOTIRT_OK;
  }
  AOTIRT_TRY(check_cuda_device(device));
  std::lock_guard<std::mutex> lock(asking);
  DeviceFacts facts;
  int major = 0, minor = 0;
  AOTIRT_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  AOTIRT_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  AOTIRT_CUDA_TRY(cudaDeviceGetAttribute(&facts.multiprocessors, cudaDevAttrMultiProcessorCount, device));
  AOTIRT_CUDA_TRY(
      cudaDeviceGetAttribute(&facts.threads_per_multiprocessor, cudaDevAttrMaxThreadsPerMultiProcessor, device));
  facts.sm_version = major * 10 + minor;
  if (cached && !ready[device].load(std::memory_order_relaxed)) {
    known[device] = facts;  // written once, under the lock, before readers may see it
    ready[device].store(true, std::memory_order_release);
  }
  *out = facts;
  return AOTIRT_OK;
}

aotirt_status compute_capability(int device, int* sm_version) {
  DeviceFacts facts;
  AOTIRT_TRY(device_facts(device, &facts));
  *sm_version = facts.sm_version;
  return AOTIRT_OK;
}

aotirt_status shared_stream(int device, StreamRef* out) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto it = shared_streams.find(device);
  if (it != shared_streams.end() && it->second->try_add_ref()) {
    *out = StreamRef::adopt(it->second);
    return AOTIRT_OK;
  }
  // Only when a stream is made: the lookup above is on every allocation's path.
  AOTIRT_TRY(check_cuda_device(device));
  AOTIRT_TRY(new_owned_stream(device, /*shared=*/true, out));
  shared_streams[device] = out->get();
  return AOTIRT_OK;
}

aotirt_status create_stream(int device, StreamRef* out) {
  AOTIRT_TRY(check_cuda_device(device));
  return new_owned_stream(device, /*shared=*/false, out);
}

StreamRef adopt_stream(cudaStream_t handle, int device) {
  auto* stream = new Stream();
  stream->handle = handle;
  stream->device = device;
  stream->owned = false;
  return StreamRef::adopt(stream);
}

cudaEvent_t record_event_quietly(const Stream& stream) {
  cudaEvent_t event = new_event_quietly(stream.device);
  if (event && cudaEventRecord(event, stream.handle) != cudaSuccess) {
    (void)cudaEventDestroy(event);
    event = nullptr;
  }
  return event;
}

Stream* current_stream() { return tls_current_stream; }
void set_current_stream(Stream* stream) { tls_current_stream = stream; }

aotirt_status stream_or_shared(Stream* stream, int device, StreamRef* out) {
  if (!stream) return shared_stream(device, out);
  if (stream->device != device)
    return fail(AOTIRT_ERROR_VALUE, "the stream is on cuda:" + std::to_string(stream->device) +
                                        ", the tensor on cuda:" + std::to_string(device));
  *out = StreamRef::share(stream);
  return AOTIRT_OK;
}

aotirt_status stream_on_device(Stream* preferred, int device, StreamRef* out) {
  if (preferred && preferred->device == device) {
    *out = StreamRef::share(preferred);
    return AOTIRT_OK;
  }
  return shared_stream(device, out);
}

aotirt_status stream_for_device(int device, StreamRef* out) { return stream_on_device(tls_current_stream, device, out); }

void restore_device(int previous) {
  if (previous >= 0 && context_exists(previous)) (void)cudaSetDevice(previous);
}

DeviceGuard::~DeviceGuard() { restore_device(previous_); }

aotirt_status DeviceGuard::enter(int device) {
  int current = 0;
  AOTIRT_CUDA_TRY(cudaGetDevice(&current));
  if (current == device) return AOTIRT_OK;
  AOTIRT_CUDA_TRY(cudaSetDevice(device));
  previous_ = current;
  return AOTIRT_OK;
}

aotirt_status configure_pool(int device) {
  // Checked on every allocation, so the common case is one atomic load.
  constexpr int kMaxDevices = 256;
  static std::atomic<bool> configured[kMaxDevices];
  static std::mutex mutex;
  if (device < 0 || device >= kMaxDevices)
    return fail(AOTIRT_ERROR_VALUE, "CUDA device index " + std::to_string(device) + " is out of range");
  if (configured[device].load(std::memory_order_acquire)) return AOTIRT_OK;
  std::lock_guard<std::mutex> lock(mutex);
  if (configured[device].load(std::memory_order_relaxed)) return AOTIRT_OK;
  cudaMemPool_t pool = nullptr;
  AOTIRT_CUDA_TRY(cudaDeviceGetDefaultMemPool(&pool, device));
  uint64_t keep_everything = UINT64_MAX;
  AOTIRT_CUDA_TRY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_everything));
  configured[device].store(true, std::memory_order_release);
  return AOTIRT_OK;
}

}  // namespace aotirt
