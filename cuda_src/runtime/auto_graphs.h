// Automatic CUDA graphs of one handle (aotirt_handle_enable_graphs): a cache
// of captured runs, keyed by the calls' input signatures, that
// aotirt_handle_run and aotirt_handle_loop replay instead of running eagerly.
//
// A signature is, per input, the dtype, the sizes, the strides and the
// device (never the address: a replay copies the inputs into the graph's
// static inputs). Its first kEagerRunsBeforeCapture calls run eagerly (a
// one-off call never pays for a capture), and more while the opt-in tuning
// has a measurement unfinished (unfinished_measurement.h); the next one
// captures it.
//
// Outputs: in copy mode (the default) a call replays an instance of the
// graph whose static outputs nobody holds and returns aliases of them
// (kGraphInstances says how many instances, and when outputs are copied
// instead); in static mode the one instance's static outputs, rewritten by
// the next call.
//
// Locks: the cache's own mutex is held across a call's lookup, capture,
// choice of an instance, replay and hand-out (so a graph is never evicted
// while in use, and no other call takes an instance between the check that
// nobody holds it and the aliases that hold it), and is always taken first:
// then a graph's (aotirt_graph::replay), then the handle's (run,
// hold_open). Nothing that holds either of those takes the cache's.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "aotirt/aotirt.h"
#include "runtime/graph.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace aotirt {

struct LoopRequest;  // loop.h

// Calls of a signature that run eagerly before the next one captures it
// (the one place this is set; aotirt.h publishes it).
constexpr uint64_t kEagerRunsBeforeCapture = AOTIRT_AUTO_GRAPH_EAGER_RUNS;
// Eager runs inside a capture, on the static inputs, before the captured
// one. The eager calls before already loaded the kernels and built the
// per-shape plans; this one run covers what the static inputs do
// differently (they are contiguous, the caller's inputs may not be: a shim
// may then plan another layout, which a capture cannot do).
constexpr int kCaptureWarmup = 1;
// Captured instances of one signature's graph in copy mode, each with its
// own static inputs and outputs. A call replays an instance whose static
// outputs nobody holds and hands out aliases of them (no copy); the caller's
// tensors keep that instance from being replayed until they are gone. Two,
// because the usual loop `out = h.run(x)` holds the previous call's outputs
// while the next call runs and lets them go right after: two instances take
// turns with no copy. A caller that keeps more calls' outputs gets copies
// (output_copies): each instance costs a capture and its own static memory,
// so more would buy nothing for that loop and cost memory for every
// signature.
constexpr size_t kGraphInstances = 2;
// Signatures counted but not captured, at most this many beyond the graphs
// (the least recently seen are forgotten): a model called with ever new
// shapes must not grow the cache without bound.
constexpr size_t kMaxCountedSignatures = 64;

// A new tensor on `stream` with `src`'s values (device to device, queued on
// `stream`, which src's producer must be ordered before): its strides when
// they are dense, else contiguous. No host wait.
aotirt_status copy_static_output(const Tensor& src, Stream* stream, Tensor** out);

class AutoGraphs {
 public:
  // `handle` owns this object. A CPU handle's is disabled from the start.
  AutoGraphs(aotirt_handle* handle, size_t max_graphs, bool static_outputs);
  AutoGraphs(const AutoGraphs&) = delete;
  AutoGraphs& operator=(const AutoGraphs&) = delete;

  // aotirt_handle_run, through the cache.
  aotirt_status run(Tensor* const* inputs, size_t num_inputs, Tensor** outputs, size_t num_outputs);
  // aotirt_handle_loop on a graph with the loop's feedback pairs (captured
  // now when none is cached). `*handled` false: graphs are off, the caller
  // runs the loop eagerly (counted here as eager runs).
  aotirt_status loop(const LoopRequest& request, bool* handled);
  // Drops every graph (the handle is being closed).
  void clear();

  void stats(aotirt_graph_stats* out);
  // NULL while graphs run; else why not. Stable once set.
  const char* disabled_reason() const;
  bool take_warning(const char** reason);
  bool static_outputs() const { return static_outputs_; }

 private:
  struct Instance {
    std::unique_ptr<aotirt_graph> graph;
    uint64_t constants_version = 0;  // the handle's, read before the capture
    size_t memory_bytes = 0;
    uint64_t last_used = 0;  // the call (tick_) that last replayed or captured it
  };
  struct Entry {
    std::string key;
    uint64_t eager_runs = 0;
    // The last eager call left a tuning measurement unfinished
    // (unfinished_measurement.h): calls past kEagerRunsBeforeCapture run
    // eagerly too (`runs_awaiting_measurement` of them, at most
    // kMostRunsAwaitingMeasurement), so that the capture takes the choices.
    bool measurement_unfinished = false;
    uint64_t runs_awaiting_measurement = 0;
    // Copy mode: up to kGraphInstances; static mode and loops: one.
    std::vector<Instance> instances;
    // Set the first time a call found every instance held (the caller keeps
    // the outputs of several calls): one instance was replaced then, and
    // from then on one instance stays free (its outputs are copied out
    // rather than handed out whenever it is the only free one), so that
    // replacing never happens twice.
    bool keep_one_free = false;
  };
  using Lru = std::list<Entry>;  // most recently used first
  // How a call of a captured signature is served (copy mode).
  enum class Serve { Alias, Copy, Eager };

  Entry& find_or_add(std::string key);
  // Drops `entry`'s instances when one was captured before the weights were
  // replaced (an invalidation); whether any are left.
  bool current(Entry& entry);
  // Captures one more instance of `entry` on `inputs` (evicting other
  // signatures' graphs for a first one); its launch ran this call. A
  // failure that is the library's (not a closed handle or, with `feedback`,
  // a wrong pair) disables graphs and gives AOTIRT_OK with *captured false:
  // the caller runs eagerly.
  aotirt_status capture(Entry& entry, Tensor* const* inputs, size_t num_inputs, const size_t* feedback,
                        size_t num_feedback, bool* captured);
  // Copy mode: the instance to serve a call of `entry` (nullptr with
  // Serve::Eager), capturing a second one or replacing one as the rules of
  // kGraphInstances and keep_one_free say. *launched: a capture ran the call.
  aotirt_status choose(Entry& entry, Tensor* const* inputs, size_t num_inputs, Instance** chosen, Serve* how,
                       bool* launched);
  aotirt_status serve(Entry& entry, Tensor* const* inputs, size_t num_inputs, Tensor** outputs, size_t num_outputs);
  void make_room(const Entry& keep);
  void drop_instance(Entry& entry, size_t i);
  void drop_graphs(Entry& entry);
  void disable(const std::string& reason);
  aotirt_status hand_out(aotirt_graph& graph, bool copy, Tensor** outputs, size_t num_outputs);
  aotirt_status run_eagerly(Tensor* const* inputs, size_t num_inputs, Tensor** outputs, size_t num_outputs);
  bool weights_replaced(const Entry& entry) const;

  aotirt_handle* handle_;  // borrowed: the owner
  const size_t max_graphs_;
  const bool static_outputs_;
  std::mutex mutex_;
  Lru lru_;
  std::unordered_map<std::string, Lru::iterator> index_;
  size_t live_graphs_ = 0;     // signatures with instances
  size_t live_instances_ = 0;
  uint64_t tick_ = 0;          // calls served by graphs, for Instance::last_used
  aotirt_graph_stats stats_{};
  // Set once, before disabled_ is: readable without the lock afterwards.
  std::string reason_;
  std::atomic<bool> disabled_{false};
  std::atomic<bool> warning_pending_{false};
  std::atomic<uint64_t> eager_while_disabled_{0};
};

}  // namespace aotirt
