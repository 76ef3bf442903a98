#include "runtime/graph_memory.h"

#include <algorithm>

namespace aotirt {
namespace {

thread_local CaptureState* tls_capture = nullptr;

}  // namespace

GraphMemory::~GraphMemory() {
  // Runs once the graph is destroyed and no tensor uses its memory: every
  // free below is queued after the graph's last launch on the launch stream.
  // Errors cannot be reported from here; after a sticky CUDA error the
  // memory is gone with the context anyway.
  Stream& launch = *launch_stream_;
  for (const Kept& k : kept_) {
    // The block is part of a segment of its stream's cache (block_cache.h):
    // it goes back there, once that stream has waited for the graph's last
    // launch and for every other stream that used it.
    launch.order_before_quietly(k.stream.get());
    for (const StreamRef& user : k.users) user->order_before_quietly(k.stream.get());
    k.stream->recycle_block(k.data);
  }
  // A graph allocation exists only from the graph's first launch on; before
  // that there is nothing to free (and freeing would be an error).
  if (launched_.load(std::memory_order_acquire))
    for (const Allocation& a : allocations_) (void)cudaFreeAsync(a.data, launch.handle);
}

void GraphMemory::allocated(void* data, size_t nbytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  allocations_.push_back({data, nbytes});
}

void GraphMemory::freed(void* data) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find_if(allocations_.begin(), allocations_.end(),
                         [data](const Allocation& a) { return a.data == data; });
  if (it != allocations_.end()) allocations_.erase(it);
}

size_t GraphMemory::live_bytes() {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t total = 0;
  for (const Allocation& a : allocations_) total += a.nbytes;
  return total;
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
