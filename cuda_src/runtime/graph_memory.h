// The device memory of a CUDA graph, and the state of a capture in progress:
// what allocate_storage, ~Storage and Stream::order_before do differently
// while a graph is being captured (graph.cpp does the capture itself).
//
// A graph is captured on a private stream of its own (never a handle's
// stream, which other threads may be using), so "this allocation is on a
// capturing stream" and "this allocation belongs to that capture" are the
// same thing. During the capture:
// - allocations on that stream become allocation nodes of the graph
//   (cudaMallocAsync while capturing), with addresses fixed for the graph's
//   life, never blocks from the stream's cache (those are shared with eager
//   work);
// - freeing one of them becomes a free node (cudaFreeAsync while capturing);
// - memory made before the capture and let go during it cannot be freed in
//   the graph (a free node only frees what the graph allocated), and the graph
//   may read it at every launch: the graph keeps it until it is gone.
// Graph allocations still live when the capture ends (the run's outputs) are
// the graph's: it frees and allocates them again at each launch
// (cudaGraphInstantiateFlagAutoFreeOnLaunch, same addresses), and once the
// graph and every tensor over them are gone, GraphMemory frees them with
// cudaFreeAsync (the CUDA programming guide, "Graph Memory Nodes": destroying
// a graph does not free its live allocations; they must be freed with
// cudaFreeAsync, cudaFree or another graph, and only exist once the graph has
// been launched).
#pragma once

#include <atomic>
#include <mutex>
#include <vector>

#include "runtime/ref.h"
#include "runtime/stream.h"

namespace aotirt {

class GraphMemory : public RefCounted {
 public:
  // `launch_stream`: where the graph is launched; the final frees go there,
  // after its last launch.
  explicit GraphMemory(StreamRef launch_stream) : launch_stream_(std::move(launch_stream)) {}
  GraphMemory(const GraphMemory&) = delete;
  GraphMemory& operator=(const GraphMemory&) = delete;
  ~GraphMemory();

  Stream* launch_stream() const { return launch_stream_.get(); }

  // An allocation node of `nbytes` was added (allocated) or freed inside the capture.
  void allocated(void* data, size_t nbytes);
  void freed(void* data);
  // Bytes of the graph's allocations not freed inside it: alive between
  // launches (the static outputs). Automatic graphs report it.
  size_t live_bytes();
  // Pool memory of `stream`, made before the capture and let go during it:
  // back to `stream` (its cache) once the graph is gone, after the graph's
  // launches and `users` are done with it.
  void keep(void* data, StreamRef stream, std::vector<StreamRef> users);
  // The graph was launched: its live allocations exist from now on.
  void launched() { launched_.store(true, std::memory_order_release); }

 private:
  struct Kept {
    void* data;
    StreamRef stream;
    std::vector<StreamRef> users;
  };

  StreamRef launch_stream_;
  std::mutex mutex_;
  struct Allocation {
    void* data;
    size_t nbytes;
  };
  std::vector<Allocation> allocations_;  // allocated in the graph, not freed in it
  std::vector<Kept> kept_;
  std::atomic<bool> launched_{false};
};

// A capture in progress: set on the capture stream (Stream::capture) and as
// the capturing thread's (capture_on_this_thread) from begin to end.
class CaptureState {
 public:
  explicit CaptureState(Ref<GraphMemory> memory) : memory_(std::move(memory)) {}

  const Ref<GraphMemory>& memory() const { return memory_; }

  // Captured work cannot wait for work outside the capture (CUDA refuses the
  // dependency: cudaErrorStreamCaptureIsolation). It waits for `producer` in
  // a different way: once the capture has ended, the launch stream is made
  // to wait for what `producer` has queued, before the graph's first launch,
  // which orders every launch after it.
  void wait_before_launch(Stream* producer);
  std::vector<StreamRef> take_producers();

 private:
  Ref<GraphMemory> memory_;
  std::mutex mutex_;
  std::vector<StreamRef> producers_;
};

// The capture this thread is doing now, or nullptr.
CaptureState* capture_on_this_thread();
void set_capture_on_this_thread(CaptureState* capture);

}  // namespace aotirt
