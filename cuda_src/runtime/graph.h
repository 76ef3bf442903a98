// CUDA graphs: one run of a CUDA handle, captured once and replayed with one
// launch (a decoder step is many small kernels; each launch costs the host
// microseconds, a graph of them costs about one).
//
// The run is captured with static inputs: tensors the graph owns, at fixed
// addresses, that each replay's inputs are copied into (stream-ordered). Its
// outputs are the static outputs: graph memory at fixed addresses, rewritten
// by every replay (graph_memory.h says who frees it, and when).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "aotirt/aotirt.h"
#include "runtime/copy_batch.h"
#include "runtime/graph_memory.h"
#include "runtime/handle.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

struct aotirt_graph {
 public:
  // See aotirt_graph_capture_feedback in aotirt.h. `feedback` holds
  // `num_feedback` pairs (output index, input index).
  static aotirt_status capture(aotirt_handle* handle, aotirt::Tensor* const* examples, size_t num_inputs,
                               int warmup, const size_t* feedback, size_t num_feedback, aotirt_graph** out);
  aotirt_graph(const aotirt_graph&) = delete;
  aotirt_graph& operator=(const aotirt_graph&) = delete;
  ~aotirt_graph() { (void)close(); }

  // `inputs` NULL: replay on the static inputs as they are. `outputs` NULL or
  // room for num_outputs() borrowed pointers.
  aotirt_status replay(aotirt::Tensor* const* inputs, size_t num_inputs, aotirt::Tensor** outputs);
  // Destroys the executable graph (work already queued still runs) and drops
  // the static tensors; replays then fail. A second close does nothing.
  aotirt_status close();

  bool closed() const { return exec_ == nullptr; }
  size_t num_inputs() const { return num_inputs_; }
  size_t num_outputs() const { return num_outputs_; }
  // Borrowed; nullptr once closed.
  aotirt::Tensor* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  aotirt::Tensor* output(size_t i) const { return i < outputs_.size() ? outputs_[i] : nullptr; }
  // Device bytes the graph holds: its static inputs and its allocations
  // alive between launches (graph_memory.h); 0 once closed.
  size_t memory_bytes();
  // Whether a tensor other than the graph's own refers to memory that a
  // replay rewrites: a static output in the graph's own allocations, or a
  // static input that an output views. Exact (reference counts, see
  // ref_count) as long as the caller is the only one that makes aliases of
  // the static outputs, under a lock it holds across this check and those
  // aliases. Memory the graph does not write (an output that is a weight)
  // never counts. False once closed.
  bool outputs_in_use();
  // Orders the launch stream after every other stream that used that memory
  // (Storage::order_users_before): due before a replay that rewrites memory
  // whose last holders queued work on other streams. No host wait.
  aotirt_status order_after_output_users();

 private:
  aotirt_graph(aotirt_handle* handle, aotirt::StreamRef stream);
  aotirt_status make_static_input(size_t i, const aotirt::Tensor& example);
  aotirt_status warm_up(int runs);
  aotirt_status record(const size_t* feedback, size_t num_feedback);
  aotirt_status run_captured(aotirt::Stream* capture_stream, const size_t* feedback, size_t num_feedback,
                             std::vector<aotirt::Tensor*>* outputs);
  aotirt_status instantiate(cudaGraph_t graph, aotirt::CaptureState& state);
  aotirt_status check_input(size_t i, const aotirt::Tensor& source) const;
  aotirt_status copy_in(size_t i, const aotirt::Tensor& source);
  // Whether `source` is a tensor of the graph's device that can reach a
  // byte of a static input (a static input itself, or a view into one).
  bool overlaps_a_static_input(const aotirt::Tensor& source) const;
  // Whether a replay copies `source` in with the other inputs in one kernel
  // (copy_batch.h): a contiguous tensor of the graph's device. Asked only of
  // inputs whose bytes lie apart from every static input's (replay sees to
  // it), so that no batched copy reads what another one writes.
  bool copied_in_batch(const aotirt::Tensor& source) const;
  // A replay's input copies, where no input overlaps a static input but
  // the one it is (is_same_view); and where some do, which are read into
  // scratch first.
  aotirt_status copy_inputs(const aotirt::Tensor* const* inputs);
  aotirt_status copy_inputs_staged(aotirt::Tensor* const* inputs);
  aotirt_status launch();
  // Whether a replay writes `storage` (see outputs_in_use), and how many of
  // the graph's own tensors refer to it. With mutex_ held.
  bool rewritten_by_replay(const aotirt::Storage& storage) const;
  int own_references(const aotirt::Storage& storage) const;
  std::string where() const;

  aotirt_handle* handle_;          // borrowed: must outlive the graph (its library holds the kernels)
  aotirt::StreamRef stream_;       // the handle's stream: input copies and launches
  size_t num_inputs_ = 0;
  size_t num_outputs_ = 0;
  cudaGraphExec_t exec_ = nullptr;
  std::vector<aotirt::Tensor*> inputs_;   // static inputs, owned
  std::vector<aotirt::Tensor*> outputs_;  // static outputs, owned
  // The static inputs' bytes, [begin, end) by address, sorted: made once
  // the static inputs are, for copied_in_batch.
  std::vector<std::pair<uintptr_t, uintptr_t>> static_ranges_;
  std::vector<aotirt::ContiguousCopy> batch_;  // a replay's batched copies (kept: no allocation per replay)
  aotirt::Ref<aotirt::GraphMemory> memory_;
  uint64_t constants_version_ = 0;
  // cudaGraphLaunch on one executable graph from two threads at once is not
  // safe (graph objects are not thread safe): replays take turns.
  std::mutex mutex_;
};
