#include "runtime/loop.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/auto_graphs.h"
#include "runtime/copy.h"
#include "runtime/errors.h"
#include "runtime/transfer.h"

namespace aotirt {
namespace {

// Tensors owned here until handed to the caller.
struct Owned {
  std::vector<Tensor*> items;
  explicit Owned(size_t n = 0) : items(n, nullptr) {}
  Owned(Owned&& other) noexcept : items(std::move(other.items)) {}
  Owned& operator=(Owned&& other) noexcept {
    if (this != &other) {
      reset();
      items = std::move(other.items);
    }
    return *this;
  }
  ~Owned() { reset(); }
  void reset() {
    for (Tensor* t : items) delete t;
    items.clear();
  }
  // Gives the tensors to `out` (n slots), or deletes them when `out` is NULL.
  void hand_to(Tensor** out) {
    if (out)
      for (size_t i = 0; i < items.size(); ++i) out[i] = items[i];
    else
      reset();
    items.clear();
  }
};

// The stacks of collected outputs: one tensor (steps, *shape) per collected
// index, made at the first step, a row written per step.
class Collector {
 public:
  Collector(const LoopRequest& request, Stream* stream) : request_(request), stream_(stream) {}

  aotirt_status take(size_t step, Tensor* const* outputs) {
    for (size_t k = 0; k < request_.num_collect; ++k) {
      const size_t o = request_.collect[k];
      const Tensor& out = *outputs[o];
      if (step == 0) {
        AOTIRT_TRY(make_stack(k, out));
      } else if (!same_dtype_and_sizes(out, *first_[k])) {
        return fail(AOTIRT_ERROR_VALUE, "collect: output " + std::to_string(o) + " was " + dtype_and_shape(*first_[k]) +
                                            " at step 0 and is " + dtype_and_shape(out) + " at step " +
                                            std::to_string(step) + ": a collected output keeps its shape");
      }
      Tensor& row = *rows_.items[k];
      row.storage_offset = static_cast<int64_t>(step) * out.numel();
      if (out.storage->device_type == AOTIRT_DEVICE_CUDA)
        AOTIRT_TRY(copy_device_to_device(row, out, stream_));
      else
        copy_host_to_host(row, out);
    }
    return AOTIRT_OK;
  }

  void hand_to(Tensor** collected) { stacks_.hand_to(collected); }

 private:
  aotirt_status make_stack(size_t k, const Tensor& out) {
    if (out.ndim + 1 > AOTIRT_MAX_DIMS)
      return fail(AOTIRT_ERROR_VALUE, "collect: output " + std::to_string(request_.collect[k]) + " has " +
                                          std::to_string(out.ndim) + " dimensions; stacked it would have more than " +
                                          std::to_string(AOTIRT_MAX_DIMS));
    int64_t sizes[AOTIRT_MAX_DIMS];
    sizes[0] = static_cast<int64_t>(request_.steps);
    for (int64_t d = 0; d < out.ndim; ++d) sizes[d + 1] = out.sizes[d];
    AOTIRT_TRY(check_shape(out.ndim + 1, sizes));  // steps * numel fits in int64
    if (out.itemsize() > 0 &&
        static_cast<uint64_t>(request_.steps) * static_cast<uint64_t>(out.numel()) > SIZE_MAX / out.itemsize())
      return fail(AOTIRT_ERROR_VALUE, "collect: " + std::to_string(request_.steps) + " steps of output " +
                                          std::to_string(request_.collect[k]) + " (" + dtype_and_shape(out) +
                                          ") do not fit in memory");
    const bool cuda = out.storage->device_type == AOTIRT_DEVICE_CUDA;
    StreamRef owner = cuda ? StreamRef::share(stream_) : StreamRef();
    StorageRef storage;
    const size_t nbytes = static_cast<size_t>(request_.steps) * static_cast<size_t>(out.numel()) * out.itemsize();
    AOTIRT_TRY(allocate_storage(nbytes, out.storage->device_type, out.storage->device_index, owner, &storage));
    if (stacks_.items.empty()) {
      stacks_.items.assign(request_.num_collect, nullptr);
      rows_.items.assign(request_.num_collect, nullptr);
      first_.assign(request_.num_collect, nullptr);
    }
    AOTIRT_TRY(make_tensor(storage, out.ndim + 1, sizes, nullptr, 0, out.dtype, owner, &stacks_.items[k]));
    // One row's view, moved along the stack by its offset.
    AOTIRT_TRY(make_tensor(std::move(storage), out.ndim, out.sizes, nullptr, 0, out.dtype, owner, &rows_.items[k]));
    first_[k] = rows_.items[k];
    return AOTIRT_OK;
  }

  const LoopRequest& request_;
  Stream* stream_;
  Owned stacks_;
  Owned rows_;
  std::vector<const Tensor*> first_;  // the shape each collected output keeps (its row view)
};

// A fed-back output must be what its input is: dtype and shape.
aotirt_status check_feedback(const LoopRequest& request, Tensor* const* outputs, size_t step) {
  for (size_t k = 0; k < request.num_feedback; ++k) {
    const size_t o = request.feedback[2 * k], i = request.feedback[2 * k + 1];
    const Tensor& from = *outputs[o];
    const Tensor& to = *request.inputs[i];
    if (!same_dtype_and_sizes(from, to))
      return fail(AOTIRT_ERROR_VALUE, "feedback: output " + std::to_string(o) + " (" + dtype_and_shape(from) +
                                          ") cannot feed input " + std::to_string(i) + " (" + dtype_and_shape(to) +
                                          "): they differ in dtype or shape (at step " + std::to_string(step) + ")");
  }
  return AOTIRT_OK;
}

}  // namespace

aotirt_status check_loop_request(const aotirt_handle& handle, const LoopRequest& r) {
  if (r.steps < 1) return fail(AOTIRT_ERROR_VALUE, "a loop runs 1 step or more, got steps=0");
  if (r.steps > static_cast<size_t>(INT64_MAX))
    return fail(AOTIRT_ERROR_VALUE, "steps=" + std::to_string(r.steps) + " is too many");
  if (r.num_inputs != handle.num_inputs())
    return fail(AOTIRT_ERROR_VALUE, "the model takes " + std::to_string(handle.num_inputs()) + " inputs, got " +
                                        std::to_string(r.num_inputs));
  if (r.outputs && r.num_outputs != handle.num_outputs())
    return fail(AOTIRT_ERROR_VALUE, "the model returns " + std::to_string(handle.num_outputs()) +
                                        " outputs, room was given for " + std::to_string(r.num_outputs));
  for (size_t i = 0; i < r.num_inputs; ++i)
    if (!r.inputs || !r.inputs[i]) return fail(AOTIRT_ERROR_VALUE, "input " + std::to_string(i) + " is NULL");
  if (r.num_feedback > 0 && !r.feedback) return fail(AOTIRT_ERROR_VALUE, "feedback pairs are NULL");
  std::vector<bool> fed(r.num_inputs, false);
  for (size_t k = 0; k < r.num_feedback; ++k) {
    const size_t o = r.feedback[2 * k], i = r.feedback[2 * k + 1];
    if (o >= handle.num_outputs() || i >= r.num_inputs)
      return fail(AOTIRT_ERROR_VALUE, "feedback pair " + std::to_string(k) + " (output " + std::to_string(o) +
                                          ", input " + std::to_string(i) + ") is out of range: the model has " +
                                          std::to_string(handle.num_outputs()) + " outputs and " +
                                          std::to_string(r.num_inputs) + " inputs");
    if (fed[i]) return fail(AOTIRT_ERROR_VALUE, "feedback: input " + std::to_string(i) + " is fed by two outputs");
    fed[i] = true;
  }
  if (r.num_collect > 0 && (!r.collect || !r.collected))
    return fail(AOTIRT_ERROR_VALUE, "collect indices and room for the collected tensors must not be NULL");
  for (size_t k = 0; k < r.num_collect; ++k)
    if (r.collect[k] >= handle.num_outputs())
      return fail(AOTIRT_ERROR_VALUE, "collect: output " + std::to_string(r.collect[k]) +
                                          " is out of range: the model has " + std::to_string(handle.num_outputs()) +
                                          " outputs");
  return AOTIRT_OK;
}

aotirt_status run_loop(aotirt_handle& handle, const LoopRequest& request) {
  AOTIRT_TRY(check_loop_request(handle, request));
  if (AutoGraphs* graphs = handle.auto_graphs()) {
    bool handled = false;
    AOTIRT_TRY(graphs->loop(request, &handled));
    if (handled) return AOTIRT_OK;
  }
  return run_loop_eagerly(handle, request);
}

aotirt_status run_loop_eagerly(aotirt_handle& handle, const LoopRequest& r) {
  const size_t n_out = handle.num_outputs();
  Stream* stream = handle.stream();  // NULL for a CPU handle
  std::vector<Tensor*> inputs(r.inputs, r.inputs + r.num_inputs);  // borrowed from the caller or `previous`
  Owned previous;
  Collector collector(r, stream);
  DeviceGuard device;
  if (stream) AOTIRT_TRY(device.enter(stream->device));
  // A tensor of another GPU (a decoder's encoder states, made on the
  // encoder's) is moved once, not at every step.
  Owned moved(r.num_inputs);
  for (size_t i = 0; stream && i < r.num_inputs; ++i) {
    const Storage& storage = *inputs[i]->storage;
    if (storage.device_type != AOTIRT_DEVICE_CUDA || storage.device_index == stream->device) continue;
    AOTIRT_TRY(copy_to_device(*inputs[i], stream->device, stream, &moved.items[i]));
    inputs[i] = moved.items[i];
  }
  for (size_t step = 0; step < r.steps; ++step) {
    Owned now(n_out);
    AOTIRT_TRY(handle.run(inputs.data(), inputs.size(), now.items.data(), n_out));
    AOTIRT_TRY(check_feedback(r, now.items.data(), step));
    AOTIRT_TRY(collector.take(step, now.items.data()));
    // The last step's outputs, read by the run just queued, are let go now:
    // their frees are stream-ordered, after that run.
    previous = std::move(now);
    for (size_t k = 0; k < r.num_feedback; ++k) inputs[r.feedback[2 * k + 1]] = previous.items[r.feedback[2 * k]];
  }
  collector.hand_to(r.collected);
  previous.hand_to(r.outputs);
  return AOTIRT_OK;
}

aotirt_status run_loop_on_graph(aotirt_graph& graph, Stream* stream, const LoopRequest& r, bool first_step_done,
                                bool static_outputs) {
  const size_t n_out = graph.num_outputs();
  std::vector<Tensor*> outputs(n_out, nullptr);  // the static outputs, borrowed
  for (size_t i = 0; i < n_out; ++i) outputs[i] = graph.output(i);
  Collector collector(r, stream);
  DeviceGuard device;
  AOTIRT_TRY(device.enter(stream->device));
  // Step 0 on the caller's inputs (copied into the static inputs unless
  // they are those); every later step on what the graph fed back itself.
  if (!first_step_done) AOTIRT_TRY(graph.replay(r.inputs, r.num_inputs, nullptr));
  AOTIRT_TRY(collector.take(0, outputs.data()));
  for (size_t step = 1; step < r.steps; ++step) {
    AOTIRT_TRY(graph.replay(nullptr, 0, nullptr));
    AOTIRT_TRY(collector.take(step, outputs.data()));
  }
  Owned last(n_out);
  if (r.outputs) {
    for (size_t i = 0; i < n_out; ++i) {
      if (static_outputs) {
        last.items[i] = alias(*outputs[i]);
        if (!last.items[i]) return fail(AOTIRT_ERROR_MEMORY, "out of host memory");
      } else {
        AOTIRT_TRY(copy_static_output(*outputs[i], stream, &last.items[i]));
      }
    }
  }
  collector.hand_to(r.collected);
  last.hand_to(r.outputs);
  return AOTIRT_OK;
}

}  // namespace aotirt
