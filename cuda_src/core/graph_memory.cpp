#include "graph_memory.h"

#include <algorithm>

namespace aotirt {
namespace {

thread_local CaptureState* tls_capture = nullptr;

// `waiter` waits, on the device, for the work queued on `producer` so far.
// Raw CUDA calls, no fail(): this runs in destructors, which cannot report
// and must leave the thread's last error alone. A call that fails means the
// context is broken, and with it the work there was to wait for.
void order_quietly(const Stream& producer, const Stream& waiter) {
  if (producer.handle == waiter.handle) return;
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) return;
  // An event is recorded on streams of its own device only.
  if (previous != producer.device && cudaSetDevice(producer.device) != cudaSuccess) return;
  cudaEvent_t event = nullptr;
  if (cudaEventCreateWithFlags(&event, cudaEventDisableTiming) == cudaSuccess) {
    if (cudaEventRecord(event, producer.handle) == cudaSuccess) (void)cudaStreamWaitEvent(waiter.handle, event, 0);
    // Not a wait: CUDA releases the event once the wait above is resolved.
    (void)cudaEventDestroy(event);
  }
  if (previous != producer.device) (void)cudaSetDevice(previous);
}

}  // namespace

GraphMemory::~GraphMemory() {
  // Runs once the graph is destroyed and no tensor uses its memory: every
  // free below is queued after the graph's last launch on the launch stream.
  // Errors cannot be reported from here; after a sticky CUDA error the
  // memory is gone with the context anyway.
  Stream& launch = *launch_stream_;
  for (const Kept& k : kept_) {
    order_quietly(*k.stream, launch);
    for (const StreamRef& user : k.users) order_quietly(*user, launch);
    (void)cudaFreeAsync(k.data, launch.handle);
  }
  // A graph allocation exists only from the graph's first launch on; before
  // that there is nothing to free (and freeing would be an error).
  if (launched_.load(std::memory_order_acquire))
    for (void* data : allocations_) (void)cudaFreeAsync(data, launch.handle);
}

void GraphMemory::allocated(void* data) {
  std::lock_guard<std::mutex> lock(mutex_);
  allocations_.push_back(data);
}

void GraphMemory::freed(void* data) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find(allocations_.begin(), allocations_.end(), data);
  if (it != allocations_.end()) allocations_.erase(it);
}

void GraphMemory::keep(void* data, StreamRef stream, std::vector<StreamRef> users) {
  std::lock_guard<std::mutex> lock(mutex_);
  kept_.push_back({data, std::move(stream), std::move(users)});
}

void CaptureState::wait_before_launch(Stream* producer) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const StreamRef& known : producers_)
    if (known.get() == producer) return;
  producers_.push_back(StreamRef::share(producer));
}

std::vector<StreamRef> CaptureState::take_producers() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::move(producers_);
}

CaptureState* capture_on_this_thread() { return tls_capture; }
void set_capture_on_this_thread(CaptureState* capture) { tls_capture = capture; }

}  // namespace aotirt
