#include "runtime/auto_graphs.h"

#include <algorithm>
#include <new>
#include <utility>
#include <vector>

#include "runtime/copy.h"
#include "runtime/errors.h"
#include "runtime/handle.h"
#include "runtime/loop.h"
#include "runtime/unfinished_measurement.h"

namespace aotirt {
namespace {

void append(std::string* key, int64_t value) { key->append(reinterpret_cast<const char*>(&value), sizeof(value)); }

// The signature of a call: what a graph's static inputs fix (never the
// addresses). `tag` keeps runs and loops (whose graphs end with feedback
// copies) apart.
aotirt_status signature(char tag, Tensor* const* inputs, size_t n, const size_t* feedback, size_t num_feedback,
                        std::string* key) {
  key->clear();
  key->reserve(8 + n * 8 * (4 + 2 * 4) + num_feedback * 16);
  key->push_back(tag);
  for (size_t i = 0; i < n; ++i) {
    if (!inputs[i]) return fail(AOTIRT_ERROR_VALUE, "input " + std::to_string(i) + " is NULL");
    const Tensor& t = *inputs[i];
    append(key, t.dtype);
    append(key, t.storage->device_type);
    append(key, t.storage->device_index);
    append(key, t.ndim);
    for (int64_t d = 0; d < t.ndim; ++d) append(key, t.sizes[d]);
    for (int64_t d = 0; d < t.ndim; ++d) append(key, t.strides[d]);
  }
  for (size_t k = 0; k < 2 * num_feedback; ++k) append(key, static_cast<int64_t>(feedback[k]));
  return AOTIRT_OK;
}

// Whether `t`'s strides lay its elements out densely (a permutation of
// contiguous strides), so that a copy of numel() elements can keep them.
bool dense(const Tensor& t) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of the dimensions that matter
  for (int64_t d = 0; d < t.ndim; ++d) {
    if (t.sizes[d] == 0) return false;
    if (t.sizes[d] > 1) dims.emplace_back(t.strides[d], t.sizes[d]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (const auto& [stride, size] : dims) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

// The handle was closed or is being: a graph cannot help.
bool closed_error(aotirt_status status) { return status == AOTIRT_ERROR_CLOSED; }

}  // namespace

aotirt_status copy_static_output(const Tensor& src, Stream* stream, Tensor** out) {
  const size_t nbytes = static_cast<size_t>(src.numel()) * src.itemsize();
  StreamRef owner = StreamRef::share(stream);
  StorageRef storage;
  AOTIRT_TRY(allocate_storage(nbytes, AOTIRT_DEVICE_CUDA, stream->device, owner, &storage));
  Tensor* copy = nullptr;
  AOTIRT_TRY(make_tensor(std::move(storage), src.ndim, src.sizes, dense(src) ? src.strides : nullptr, 0, src.dtype,
                         owner, &copy));
  aotirt_status copied = copy_device_to_device(*copy, src, stream);
  if (copied != AOTIRT_OK) {
    delete copy;
    return copied;
  }
  *out = copy;
  return AOTIRT_OK;
}

AutoGraphs::AutoGraphs(aotirt_handle* handle, size_t max_graphs, bool static_outputs)
    : handle_(handle), max_graphs_(max_graphs), static_outputs_(static_outputs) {
  if (handle->device_type() != AOTIRT_DEVICE_CUDA)
    disable("graphs=True does nothing for a CPU handle (CUDA graphs record GPU work): " + handle->path() +
            " runs eagerly, as without it");
  warning_pending_.store(false, std::memory_order_release);  // not a failure: nothing to warn about
}

const char* AutoGraphs::disabled_reason() const {
  return disabled_.load(std::memory_order_acquire) ? reason_.c_str() : nullptr;
}

bool AutoGraphs::take_warning(const char** reason) {
  if (!warning_pending_.load(std::memory_order_acquire) || !warning_pending_.exchange(false)) return false;
  if (reason) *reason = reason_.c_str();
  return true;
}

void AutoGraphs::stats(aotirt_graph_stats* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  *out = stats_;
  out->enabled = disabled_.load(std::memory_order_acquire) ? 0 : 1;
  out->graphs = live_graphs_;
  out->instances = live_instances_;
  out->eager_runs += eager_while_disabled_.load(std::memory_order_relaxed);
}

void AutoGraphs::disable(const std::string& reason) {
  // Called once at most with the lock held (or from the constructor):
  // reason_ is written before disabled_ publishes it.
  if (disabled_.load(std::memory_order_acquire)) return;
  reason_ = reason;
  for (Entry& entry : lru_) drop_graphs(entry);
  lru_.clear();
  index_.clear();
  disabled_.store(true, std::memory_order_release);
  warning_pending_.store(true, std::memory_order_release);
}

void AutoGraphs::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Entry& entry : lru_) drop_graphs(entry);
  lru_.clear();
  index_.clear();
}

AutoGraphs::Entry& AutoGraphs::find_or_add(std::string key) {
  auto found = index_.find(key);
  if (found != index_.end()) {
    lru_.splice(lru_.begin(), lru_, found->second);  // now the most recently used
    return *found->second;
  }
  // Forget the least recently seen signatures that have no graph.
  size_t counted = lru_.size() - live_graphs_;
  for (auto it = lru_.end(); counted >= kMaxCountedSignatures && it != lru_.begin();) {
    --it;
    if (!it->instances.empty()) continue;
    index_.erase(it->key);
    it = lru_.erase(it);
    --counted;
  }
  lru_.emplace_front();
  lru_.front().key = std::move(key);
  index_.emplace(lru_.front().key, lru_.begin());
  return lru_.front();
}

bool AutoGraphs::weights_replaced(const Entry& entry) const {
  const uint64_t now = handle_->constants_version();
  for (const Instance& instance : entry.instances)
    if (instance.constants_version != now) return true;
  return false;
}

bool AutoGraphs::current(Entry& entry) {
  if (entry.instances.empty()) return false;
  if (!weights_replaced(entry)) return true;
  // They read the old weights' addresses: captured again below.
  drop_graphs(entry);
  ++stats_.invalidations;
  return false;
}

void AutoGraphs::drop_instance(Entry& entry, size_t i) {
  Instance& instance = entry.instances[i];
  // Not a wait: launches already queued run to the end, and memory that an
  // alias of a static output still uses stays until that alias goes.
  (void)instance.graph->close();
  stats_.memory_bytes -= instance.memory_bytes;
  --live_instances_;
  entry.instances.erase(entry.instances.begin() + static_cast<std::ptrdiff_t>(i));
  if (entry.instances.empty()) {
    --live_graphs_;
    entry.keep_one_free = false;  // a new set of instances starts afresh
  }
}

void AutoGraphs::drop_graphs(Entry& entry) {
  while (!entry.instances.empty()) drop_instance(entry, entry.instances.size() - 1);
}

void AutoGraphs::make_room(const Entry& keep) {
  for (auto it = lru_.end(); live_graphs_ >= max_graphs_ && it != lru_.begin();) {
    --it;
    if (it->instances.empty() || &*it == &keep) continue;
    drop_graphs(*it);
    ++stats_.evictions;
  }
}

aotirt_status AutoGraphs::capture(Entry& entry, Tensor* const* inputs, size_t num_inputs, const size_t* feedback,
                                  size_t num_feedback, bool* captured) {
  *captured = false;
  const bool first = entry.instances.empty();
  if (first) make_room(entry);  // max_graphs counts signatures: a second instance evicts nothing
  // Read before the capture: should the weights change meanwhile, the
  // graph counts as stale (dropped at its next use), never the reverse.
  const uint64_t version = handle_->constants_version();
  aotirt_graph* graph = nullptr;
  aotirt_status status = aotirt_graph::capture(handle_, inputs, num_inputs, kCaptureWarmup, feedback, num_feedback,
                                               &graph);
  if (status != AOTIRT_OK) {
    // A closed handle fails eagerly too; a wrong feedback pair is the
    // caller's mistake (only loops pass pairs): both are the call's errors.
    if (closed_error(status) || (num_feedback > 0 && status == AOTIRT_ERROR_VALUE)) return status;
    disable(aotirt_last_error_message());
    return AOTIRT_OK;
  }
  Instance instance;
  instance.graph.reset(graph);
  instance.constants_version = version;
  instance.memory_bytes = graph->memory_bytes();
  instance.last_used = tick_;
  entry.instances.push_back(std::move(instance));
  stats_.memory_bytes += entry.instances.back().memory_bytes;
  ++stats_.captures;
  ++live_instances_;
  if (first) ++live_graphs_;
  *captured = true;
  return AOTIRT_OK;
}

aotirt_status AutoGraphs::choose(Entry& entry, Tensor* const* inputs, size_t num_inputs, Instance** chosen,
                                 Serve* how, bool* launched) {
  *chosen = nullptr;
  *how = Serve::Eager;
  *launched = false;
  // Exact under mutex_: only hand_out, under it, makes aliases of static
  // outputs, so an instance found free stays free until this call's own.
  Instance* free_ones[kGraphInstances] = {};
  size_t num_free = 0;
  for (Instance& instance : entry.instances)
    if (num_free < kGraphInstances && !instance.graph->outputs_in_use()) free_ones[num_free++] = &instance;
  if (num_free == 0) {
    if (entry.instances.size() >= kGraphInstances) {
      // The caller keeps the outputs of the last kGraphInstances calls, and
      // replaying either instance would rewrite them. Once per set of
      // instances: the least recently used one leaves the cache (its
      // outputs live on with the caller's tensors, as an evicted graph's
      // do) and a new one takes its place, which then stays free.
      if (entry.keep_one_free) return AOTIRT_OK;  // held by what no alias explains: eager
      entry.keep_one_free = true;
      size_t oldest = 0;
      for (size_t i = 1; i < entry.instances.size(); ++i)
        if (entry.instances[i].last_used < entry.instances[oldest].last_used) oldest = i;
      drop_instance(entry, oldest);
    }
    // Room for one more: the first instance is held (the caller still has
    // the last call's outputs), or one was just replaced. It is captured
    // now, on this call's inputs; its launch runs this call.
    bool captured = false;
    AOTIRT_TRY(capture(entry, inputs, num_inputs, nullptr, 0, &captured));
    if (!captured) return AOTIRT_OK;  // graphs are now off: eager
    free_ones[num_free++] = &entry.instances.back();
    *launched = true;
  }
  *chosen = free_ones[0];
  // An instance handed out while it is the only free one leaves none for the
  // next call; after a replacement that is not allowed (keep_one_free).
  *how = entry.keep_one_free && num_free < 2 ? Serve::Copy : Serve::Alias;
  return AOTIRT_OK;
}

aotirt_status AutoGraphs::hand_out(aotirt_graph& graph, bool copy, Tensor** outputs, size_t num_outputs) {
  for (size_t i = 0; i < num_outputs; ++i) outputs[i] = nullptr;
  aotirt_status status = AOTIRT_OK;
  DeviceGuard device;
  if (copy) status = device.enter(handle_->device_index());
  for (size_t i = 0; i < num_outputs && status == AOTIRT_OK; ++i) {
    const Tensor& source = *graph.output(i);
    if (copy) {
      status = copy_static_output(source, handle_->stream(), &outputs[i]);
    } else {
      outputs[i] = alias(source);
      if (!outputs[i]) status = fail(AOTIRT_ERROR_MEMORY, "out of host memory");
    }
  }
  if (status != AOTIRT_OK)
    for (size_t i = 0; i < num_outputs; ++i) {
      delete outputs[i];
      outputs[i] = nullptr;
    }
  return status;
}

aotirt_status AutoGraphs::run_eagerly(Tensor* const* inputs, size_t num_inputs, Tensor** outputs,
                                      size_t num_outputs) {
  aotirt_status status = handle_->run(inputs, num_inputs, outputs, num_outputs);
  if (status == AOTIRT_OK) ++stats_.eager_runs;
  return status;
}

aotirt_status AutoGraphs::serve(Entry& entry, Tensor* const* inputs, size_t num_inputs, Tensor** outputs,
                                size_t num_outputs) {
  Instance* instance = &entry.instances.front();  // static mode: the one instance, rewritten by each call
  Serve how = Serve::Alias;
  bool launched = false;
  if (!static_outputs_) AOTIRT_TRY(choose(entry, inputs, num_inputs, &instance, &how, &launched));
  if (how == Serve::Eager) return run_eagerly(inputs, num_inputs, outputs, num_outputs);
  instance->last_used = ++tick_;
  aotirt_graph& graph = *instance->graph;
  if (!launched) {
    // Work that the last holders of these outputs queued on other streams
    // (reading them, or a copy of them) comes first: the replay rewrites them.
    AOTIRT_TRY(graph.order_after_output_users());
    aotirt_status replayed = graph.replay(inputs, num_inputs, nullptr);
    if (replayed != AOTIRT_OK && weights_replaced(entry)) {
      // Replaced between the check and the launch: eager this time.
      drop_graphs(entry);
      ++stats_.invalidations;
      return run_eagerly(inputs, num_inputs, outputs, num_outputs);
    }
    AOTIRT_TRY(replayed);
  }
  ++stats_.hits;  // a call of a captured signature, whether it replayed or captured a second instance
  if (how == Serve::Copy) ++stats_.output_copies;
  return hand_out(graph, how == Serve::Copy, outputs, num_outputs);
}

aotirt_status AutoGraphs::run(Tensor* const* inputs, size_t num_inputs, Tensor** outputs, size_t num_outputs) {
  // Calls the eager run refuses (counts, devices, shapes) are refused by it,
  // with its messages: only signatures that ran eagerly are ever captured.
  if (disabled_.load(std::memory_order_acquire) || num_inputs != handle_->num_inputs() ||
      num_outputs != handle_->num_outputs() || !inputs || !outputs) {
    aotirt_status status = handle_->run(inputs, num_inputs, outputs, num_outputs);
    if (status == AOTIRT_OK) eager_while_disabled_.fetch_add(1, std::memory_order_relaxed);
    return status;
  }
  std::string key;
  AOTIRT_TRY(signature('R', inputs, num_inputs, nullptr, 0, &key));
  std::lock_guard<std::mutex> lock(mutex_);
  if (disabled_.load(std::memory_order_acquire)) return run_eagerly(inputs, num_inputs, outputs, num_outputs);
  Entry& entry = find_or_add(std::move(key));
  if (current(entry)) return serve(entry, inputs, num_inputs, outputs, num_outputs);
  const bool awaiting =
      entry.measurement_unfinished && entry.runs_awaiting_measurement < kMostRunsAwaitingMeasurement;
  if (entry.eager_runs < kEagerRunsBeforeCapture || awaiting) {
    take_unfinished_measurement();  // an earlier call's on this thread, not this one's
    aotirt_status status = run_eagerly(inputs, num_inputs, outputs, num_outputs);
    if (status == AOTIRT_OK) {
      if (entry.eager_runs < kEagerRunsBeforeCapture)
        ++entry.eager_runs;
      else
        ++entry.runs_awaiting_measurement;
      entry.measurement_unfinished = take_unfinished_measurement();
    }
    return status;
  }
  bool captured = false;
  AOTIRT_TRY(capture(entry, inputs, num_inputs, nullptr, 0, &captured));
  // Not captured: graphs are now off (disable() dropped `entry`).
  if (!captured) return run_eagerly(inputs, num_inputs, outputs, num_outputs);
  entry.instances.back().last_used = ++tick_;
  // The capture's own launch ran this call: its results are in the static
  // outputs, handed out as a replay's are (nobody holds them yet).
  return hand_out(*entry.instances.back().graph, false, outputs, num_outputs);
}

aotirt_status AutoGraphs::loop(const LoopRequest& request, bool* handled) {
  *handled = false;
  if (disabled_.load(std::memory_order_acquire)) {
    eager_while_disabled_.fetch_add(request.steps, std::memory_order_relaxed);
    return AOTIRT_OK;
  }
  std::string key;
  AOTIRT_TRY(signature('L', request.inputs, request.num_inputs, request.feedback, request.num_feedback, &key));
  std::lock_guard<std::mutex> lock(mutex_);
  if (disabled_.load(std::memory_order_acquire)) {
    stats_.eager_runs += request.steps;
    return AOTIRT_OK;
  }
  Entry& entry = find_or_add(std::move(key));
  // One instance: a loop hands out only its last step's outputs, copied in
  // copy mode (nothing of the graph's stays with the caller).
  bool first_step_done = false;
  if (current(entry)) {
    ++stats_.hits;
  } else {
    // A loop is many steps: captured at its first call.
    bool captured = false;
    AOTIRT_TRY(capture(entry, request.inputs, request.num_inputs, request.feedback, request.num_feedback,
                       &captured));
    if (!captured) {
      stats_.eager_runs += request.steps;
      return AOTIRT_OK;  // graphs are now off: the caller loops eagerly
    }
    first_step_done = true;
  }
  aotirt_graph& graph = *entry.instances.front().graph;
  // Static mode: the last holders of its outputs may have used them on other streams.
  AOTIRT_TRY(graph.order_after_output_users());
  aotirt_status status = run_loop_on_graph(graph, handle_->stream(), request, first_step_done, static_outputs_);
  if (status != AOTIRT_OK && weights_replaced(entry)) {
    // Replaced between the check and a launch: nothing was handed out yet,
    // so the caller loops eagerly on the new weights.
    drop_graphs(entry);
    ++stats_.invalidations;
    stats_.eager_runs += request.steps;
    return AOTIRT_OK;
  }
  *handled = status == AOTIRT_OK;
  return status;
}

}  // namespace aotirt
