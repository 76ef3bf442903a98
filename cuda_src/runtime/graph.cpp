#include "runtime/graph.h"

#include <algorithm>
#include <iterator>
#include <memory>
#include <new>
#include <utility>

#include "runtime/copy.h"
#include "runtime/dtypes.h"
#include "runtime/errors.h"
#include "runtime/transfer.h"

using namespace aotirt;

namespace {

// Whether `a` is the static input `b` itself (another handle to its view).
bool is_same_view(const Tensor& a, const Tensor& b) {
  if (!same_dtype_and_sizes(a, b) || a.data() != b.data() || a.storage->device_type != b.storage->device_type)
    return false;
  for (int64_t d = 0; d < a.ndim; ++d)
    if (a.sizes[d] > 1 && a.strides[d] != b.strides[d]) return false;
  return true;
}

std::string cuda_reason(cudaError_t err, const char* call) {
  return std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err) + " (in " + call + ")";
}

// closed() reads what close() writes under the handle's lock.
bool handle_closed(aotirt_handle& handle) {
  std::unique_lock<std::mutex> open = handle.hold_open();
  return handle.closed();
}

// Tensors a run returned, deleted unless taken.
struct OwnedTensors {
  std::vector<Tensor*> items;
  ~OwnedTensors() {
    for (Tensor* t : items) delete t;
  }
};

}  // namespace

aotirt_graph::aotirt_graph(aotirt_handle* handle, StreamRef stream)
    : handle_(handle),
      stream_(std::move(stream)),
      num_inputs_(handle->num_inputs()),
      num_outputs_(handle->num_outputs()) {}

std::string aotirt_graph::where() const { return handle_->path(); }

aotirt_status aotirt_graph::capture(aotirt_handle* handle, Tensor* const* examples, size_t num_inputs, int warmup,
                                    const size_t* feedback, size_t num_feedback, aotirt_graph** out) {
  *out = nullptr;
  if (handle->device_type() != AOTIRT_DEVICE_CUDA)
    return fail(AOTIRT_ERROR_TYPE, "CUDA graphs capture runs of CUDA handles; the handle for " + handle->path() +
                                       " runs on the CPU");
  if (handle_closed(*handle)) return fail(AOTIRT_ERROR_CLOSED, "the handle for " + handle->path() + " is closed");
  if (num_inputs != handle->num_inputs())
    return fail(AOTIRT_ERROR_VALUE, "the model takes " + std::to_string(handle->num_inputs()) + " inputs, got " +
                                        std::to_string(num_inputs) + " example inputs");
  if (warmup < 0)
    return fail(AOTIRT_ERROR_VALUE, "warmup is a number of eager runs (0 or more), got " + std::to_string(warmup));
  for (size_t i = 0; i < num_inputs; ++i)
    if (!examples || !examples[i]) return fail(AOTIRT_ERROR_VALUE, "example input " + std::to_string(i) + " is NULL");
  if (num_feedback > 0 && !feedback) return fail(AOTIRT_ERROR_VALUE, "feedback pairs are NULL");
  std::vector<bool> fed(num_inputs, false);
  for (size_t k = 0; k < num_feedback; ++k) {
    const size_t output = feedback[2 * k], input = feedback[2 * k + 1];
    if (output >= handle->num_outputs() || input >= num_inputs)
      return fail(AOTIRT_ERROR_VALUE, "feedback pair " + std::to_string(k) + " (output " + std::to_string(output) +
                                          ", input " + std::to_string(input) + ") is out of range: the model has " +
                                          std::to_string(handle->num_outputs()) + " outputs and " +
                                          std::to_string(num_inputs) + " inputs");
    if (fed[input])
      return fail(AOTIRT_ERROR_VALUE, "feedback: input " + std::to_string(input) + " is fed by two outputs");
    fed[input] = true;
  }

  DeviceGuard device;
  AOTIRT_TRY(device.enter(handle->device_index()));
  std::unique_ptr<aotirt_graph> graph(new (std::nothrow) aotirt_graph(handle, StreamRef::share(handle->stream())));
  if (!graph) return fail(AOTIRT_ERROR_MEMORY, "out of host memory");
  // Static inputs exist before the capture: the graph reads them where they are.
  for (size_t i = 0; i < num_inputs; ++i) AOTIRT_TRY(graph->make_static_input(i, *examples[i]));
  for (const Tensor* input : graph->inputs_) {
    const uintptr_t begin = reinterpret_cast<uintptr_t>(input->data());
    graph->static_ranges_.emplace_back(begin, begin + static_cast<size_t>(input->numel()) * input->itemsize());
  }
  std::sort(graph->static_ranges_.begin(), graph->static_ranges_.end());
  graph->batch_.reserve(num_inputs);
  AOTIRT_TRY(graph->warm_up(warmup));
  graph->constants_version_ = handle->constants_version();
  AOTIRT_TRY(graph->record(feedback, num_feedback));
  // The first launch, on the example inputs: the static outputs hold its
  // results right away, as a run's outputs would, and the graph's memory
  // exists from here on (graph_memory.h). The handle is held open until it is
  // queued: another thread may have closed it since the captured run.
  std::unique_lock<std::mutex> open = handle->hold_open();
  if (handle->closed())
    return fail(AOTIRT_ERROR_CLOSED, "the handle for " + handle->path() + " was closed during the capture");
  AOTIRT_TRY(graph->launch());
  *out = graph.release();
  return AOTIRT_OK;
}

aotirt_status aotirt_graph::make_static_input(size_t i, const Tensor& example) {
  StorageRef storage;
  const size_t nbytes = static_cast<size_t>(example.numel()) * example.itemsize();
  AOTIRT_TRY(allocate_storage(nbytes, AOTIRT_DEVICE_CUDA, stream_->device, stream_, &storage));
  Tensor* input = nullptr;
  AOTIRT_TRY(make_tensor(std::move(storage), example.ndim, example.sizes, nullptr, 0, example.dtype, stream_, &input));
  inputs_.push_back(input);
  return copy_in(i, example);
}

aotirt_status aotirt_graph::warm_up(int runs) {
  // Eager runs first, so that what happens once (lazy kernel loading, the
  // first allocations, a library's own set-up) happens outside the capture.
  for (int r = 0; r < runs; ++r) {
    OwnedTensors outputs;
    outputs.items.assign(num_outputs_, nullptr);
    AOTIRT_TRY(handle_->run(inputs_.data(), num_inputs_, outputs.items.data(), num_outputs_));
  }
  return AOTIRT_OK;
}

aotirt_status aotirt_graph::record(const size_t* feedback, size_t num_feedback) {
  // A private stream: work other threads queue on the handle's stream (which
  // every handle of the device may share) must not land in the graph, and a
  // failed capture leaves the handle's stream untouched.
  StreamRef capture_stream;
  AOTIRT_TRY(create_stream(stream_->device, &capture_stream));
  auto memory = Ref<GraphMemory>::adopt(new (std::nothrow) GraphMemory(stream_));
  if (!memory) return fail(AOTIRT_ERROR_MEMORY, "out of host memory");
  CaptureState state(memory);
  OwnedTensors outputs;
  outputs.items.assign(num_outputs_, nullptr);

  capture_stream->capture.store(&state, std::memory_order_release);
  set_capture_on_this_thread(&state);
  aotirt_status status = AOTIRT_OK;
  std::string reason;
  cudaGraph_t graph = nullptr;
  // Thread-local: this thread may not make calls that cannot be captured
  // (host waits, cudaMalloc, event queries); other threads are unaffected.
  cudaError_t begun = cudaStreamBeginCapture(capture_stream->handle, cudaStreamCaptureModeThreadLocal);
  if (begun != cudaSuccess) {
    status = AOTIRT_ERROR_AOTI;
    reason = cuda_reason(begun, "cudaStreamBeginCapture");
  } else {
    status = run_captured(capture_stream.get(), feedback, num_feedback, &outputs.items);
    if (status != AOTIRT_OK) reason = aotirt_last_error_message();
    // Always ended, also after a failure: the stream must leave capture mode.
    cudaError_t ended = cudaStreamEndCapture(capture_stream->handle, &graph);
    if (ended != cudaSuccess && status == AOTIRT_OK) {
      status = AOTIRT_ERROR_AOTI;
      reason = cuda_reason(ended, "cudaStreamEndCapture");
    } else if (ended != cudaSuccess) {
      reason += " (then " + cuda_reason(ended, "cudaStreamEndCapture") + ")";
    }
  }
  set_capture_on_this_thread(nullptr);
  capture_stream->capture.store(nullptr, std::memory_order_release);

  if (status != AOTIRT_OK) {
    // The partial graph is discarded; nothing of it was ever launched, so its
    // allocations never existed. The capture's error is not sticky, but CUDA
    // keeps it as the last error: clear it, so that later calls do not
    // report it.
    if (graph) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    if (status == AOTIRT_ERROR_VALUE) return fail(status, reason);  // our own check of the feedback pairs
    const std::string prefix = where() + ": ";
    if (reason.compare(0, prefix.size(), prefix) == 0) reason.erase(0, prefix.size());
    return fail(AOTIRT_ERROR_AOTI, where() + " cannot be captured as a CUDA graph: " + reason);
  }
  AOTIRT_TRY(instantiate(graph, state));
  outputs_ = std::move(outputs.items);
  outputs.items.clear();
  memory_ = std::move(memory);
  return AOTIRT_OK;
}

aotirt_status aotirt_graph::run_captured(Stream* capture_stream, const size_t* feedback, size_t num_feedback,
                                         std::vector<Tensor*>* outputs) {
  aotirt_status ran = handle_->run(inputs_.data(), num_inputs_, outputs->data(), num_outputs_, capture_stream);
  // A failed run is the model's (or a shim's) failure, whatever its kind.
  if (ran != AOTIRT_OK) return ran == AOTIRT_ERROR_VALUE ? AOTIRT_ERROR_AOTI : ran;
  // Feedback: the graph ends by copying these outputs into static inputs,
  // so that the next replay takes them with no copy of its own.
  for (size_t k = 0; k < num_feedback; ++k) {
    const size_t o = feedback[2 * k], i = feedback[2 * k + 1];
    const Tensor& from = *(*outputs)[o];
    Tensor& to = *inputs_[i];
    if (!same_dtype_and_sizes(from, to) || from.storage->device_type != AOTIRT_DEVICE_CUDA)
      return fail(AOTIRT_ERROR_VALUE, "feedback: output " + std::to_string(o) + " (" + dtype_and_shape(from) +
                                          (from.storage->device_type == AOTIRT_DEVICE_CUDA ? "" : ", on the CPU") +
                                          ") cannot feed input " + std::to_string(i) + " (" +
                                          dtype_and_shape(to) + ")");
    aotirt_status copied = copy_device_to_device(to, from, capture_stream);
    if (copied != AOTIRT_OK) return copied == AOTIRT_ERROR_VALUE ? AOTIRT_ERROR_AOTI : copied;
  }
  return AOTIRT_OK;
}

aotirt_status aotirt_graph::instantiate(cudaGraph_t graph, CaptureState& state) {
  // AutoFreeOnLaunch: the outputs of one launch are still allocated when the
  // next one starts (the caller reads them in between); without the flag
  // that second launch fails.
  cudaError_t made = cudaGraphInstantiateWithFlags(&exec_, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch);
  // The executable graph no longer needs the graph it was made from.
  cudaError_t destroyed = cudaGraphDestroy(graph);
  if (made != cudaSuccess) {
    exec_ = nullptr;
    (void)cudaGetLastError();
    return fail(AOTIRT_ERROR_AOTI, where() + " cannot be captured as a CUDA graph: " +
                                       cuda_reason(made, "cudaGraphInstantiateWithFlags"));
  }
  if (destroyed != cudaSuccess) return fail_cuda(destroyed, "cudaGraphDestroy");
  // Streams the captured work waited for: the launch stream waits for them
  // now, before the first launch and so before every launch.
  for (const StreamRef& producer : state.take_producers()) AOTIRT_TRY(producer->order_before(stream_.get()));
  return AOTIRT_OK;
}

aotirt_status aotirt_graph::check_input(size_t i, const Tensor& source) const {
  const Tensor& target = *inputs_[i];
  if (!same_dtype_and_sizes(source, target))
    return fail(AOTIRT_ERROR_VALUE, "input " + std::to_string(i) + ": the graph was captured with " +
                                        dtype_and_shape(target) + ", got " + dtype_and_shape(source));
  // A CUDA tensor of another GPU is welcome: copy_in moves it (a peer copy).
  const Storage& storage = *source.storage;
  if (storage.device_type != AOTIRT_DEVICE_CUDA && !source.is_contiguous())
    return fail(AOTIRT_ERROR_VALUE, "input " + std::to_string(i) + " is a strided host tensor: pass a contiguous one");
  return AOTIRT_OK;
}

aotirt_status aotirt_graph::copy_in(size_t i, const Tensor& source) {
  AOTIRT_TRY(check_input(i, source));
  Tensor& target = *inputs_[i];
  Stream* stream = stream_.get();
  if (source.storage->device_type == AOTIRT_DEVICE_CUDA && source.storage->device_index != stream->device)
    return copy_across_devices(target, source, stream);  // after its producer, on the graph's device
  if (source.storage->device_type == AOTIRT_DEVICE_CUDA) {
    AOTIRT_TRY(use_on(source, stream));
    return copy_device_to_device(target, source, stream);
  }
  const size_t nbytes = static_cast<size_t>(target.numel()) * target.itemsize();
  // Stream-ordered; pageable host memory has been read when the call returns.
  if (nbytes > 0)
    AOTIRT_CUDA_TRY(cudaMemcpyAsync(target.data(), source.data(), nbytes, cudaMemcpyHostToDevice, stream->handle));
  return AOTIRT_OK;
}

bool aotirt_graph::overlaps_a_static_input(const Tensor& source) const {
  const Storage& storage = *source.storage;
  if (storage.device_type != AOTIRT_DEVICE_CUDA || storage.device_index != stream_->device || source.numel() == 0)
    return false;
  // The bytes the view can reach: from its lowest element to its highest.
  int64_t low = 0, high = 0;
  for (int64_t d = 0; d < source.ndim; ++d) {
    const int64_t reach = (source.sizes[d] - 1) * source.strides[d];
    (reach < 0 ? low : high) += reach;
  }
  const int64_t itemsize = static_cast<int64_t>(source.itemsize());
  const uintptr_t data = reinterpret_cast<uintptr_t>(source.data());
  const uintptr_t begin = data - static_cast<uintptr_t>(-low * itemsize);
  const uintptr_t end = data + static_cast<uintptr_t>((high + 1) * itemsize);
  // The static inputs never overlap each other: only the last one that
  // starts before `end` can reach past `begin`.
  auto starts_at_or_after_end = std::lower_bound(
      static_ranges_.begin(), static_ranges_.end(), end,
      [](const std::pair<uintptr_t, uintptr_t>& range, uintptr_t at) { return range.first < at; });
  return starts_at_or_after_end != static_ranges_.begin() && std::prev(starts_at_or_after_end)->second > begin;
}

bool aotirt_graph::copied_in_batch(const Tensor& source) const {
  // No overlap test here: replay has already made every input copy_inputs
  // sees lie apart from the static inputs (copy_inputs_staged).
  const Storage& storage = *source.storage;
  return storage.device_type == AOTIRT_DEVICE_CUDA && storage.device_index == stream_->device &&
         source.is_contiguous();
}

aotirt_status aotirt_graph::copy_inputs(const Tensor* const* inputs) {
  // The others first, in order, then the batch. No input here reads a
  // static input but the one it is (replay checked; copy_inputs_staged
  // reads those into scratch), so no copy can read what another writes,
  // and each writes its own static input alone.
  batch_.clear();
  for (size_t i = 0; i < num_inputs_; ++i) {
    const Tensor& source = *inputs[i];
    if (is_same_view(source, *inputs_[i])) continue;  // already there
    if (!copied_in_batch(source)) {
      AOTIRT_TRY(copy_in(i, source));
      continue;
    }
    AOTIRT_TRY(use_on(source, stream_.get()));
    const size_t nbytes = static_cast<size_t>(source.numel()) * source.itemsize();
    if (nbytes > 0) batch_.push_back({inputs_[i]->data(), source.data(), nbytes});
  }
  return copy_contiguous_batch(batch_.data(), batch_.size(), stream_.get());
}

aotirt_status aotirt_graph::copy_inputs_staged(Tensor* const* inputs) {
  // An input that reads a static input (another position's, or a view into
  // one) is read as it is now, before any static input is rewritten: copied
  // to a scratch tensor first, which the copies then read. Copying in input
  // order instead would hand a later position what an earlier copy just
  // wrote, and a swap of two static inputs would lose one. Rare (a static
  // input fed to another position), so the scratch is allocated here, from
  // the stream's cache; it goes back there once the copies are queued, and
  // the stream orders its next user after them.
  OwnedTensors staged;
  std::vector<const Tensor*> sources(inputs, inputs + num_inputs_);
  for (size_t i = 0; i < num_inputs_; ++i) {
    const Tensor& source = *inputs[i];
    if (is_same_view(source, *inputs_[i]) || !overlaps_a_static_input(source)) continue;
    StorageRef storage;
    AOTIRT_TRY(allocate_storage(static_cast<size_t>(source.numel()) * source.itemsize(), AOTIRT_DEVICE_CUDA,
                                stream_->device, stream_, &storage));
    Tensor* scratch = nullptr;
    AOTIRT_TRY(make_tensor(std::move(storage), source.ndim, source.sizes, nullptr, 0, source.dtype, stream_, &scratch));
    staged.items.push_back(scratch);
    AOTIRT_TRY(use_on(source, stream_.get()));
    AOTIRT_TRY(copy_device_to_device(*scratch, source, stream_.get()));
    sources[i] = scratch;
  }
  return copy_inputs(sources.data());
}

aotirt_status aotirt_graph::launch() {
  AOTIRT_CUDA_TRY(cudaGraphLaunch(exec_, stream_->handle));
  memory_->launched();
  return AOTIRT_OK;
}

aotirt_status aotirt_graph::replay(Tensor* const* inputs, size_t num_inputs, Tensor** outputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed()) return fail(AOTIRT_ERROR_CLOSED, "this CUDA graph of " + where() + " is closed");
  // Until the launch is queued: the graph reads the model's weights, which
  // close() frees and an update replaces. Always the graph's lock first, then
  // the handle's: nothing that holds the handle's takes a graph's.
  std::unique_lock<std::mutex> open = handle_->hold_open();
  if (handle_->closed())
    return fail(AOTIRT_ERROR_CLOSED, "the handle for " + where() + " is closed: its CUDA graph cannot be replayed");
  if (handle_->constants_version() != constants_version_)
    return fail(AOTIRT_ERROR_AOTI, where() + ": the model's weights were replaced after this CUDA graph was "
                                              "captured, and the graph reads the old ones: capture it again");
  if (inputs && num_inputs != num_inputs_)
    return fail(AOTIRT_ERROR_VALUE, "the graph takes " + std::to_string(num_inputs_) + " inputs, got " +
                                        std::to_string(num_inputs));
  AOTIRT_TRY(check_device_usable(stream_->device));
  DeviceGuard device;
  AOTIRT_TRY(device.enter(stream_->device));
  if (inputs) {
    // All checked before any is copied: a refused replay changes nothing.
    for (size_t i = 0; i < num_inputs_; ++i) {
      if (!inputs[i]) return fail(AOTIRT_ERROR_VALUE, "input " + std::to_string(i) + " is NULL");
      AOTIRT_TRY(check_input(i, *inputs[i]));
    }
    bool reads_a_static_input = false;
    for (size_t i = 0; i < num_inputs_ && !reads_a_static_input; ++i)
      reads_a_static_input = !is_same_view(*inputs[i], *inputs_[i]) && overlaps_a_static_input(*inputs[i]);
    AOTIRT_TRY(reads_a_static_input ? copy_inputs_staged(inputs) : copy_inputs(inputs));
  }
  AOTIRT_TRY(launch());
  if (outputs)
    for (size_t i = 0; i < num_outputs_; ++i) outputs[i] = outputs_[i];
  return AOTIRT_OK;
}

size_t aotirt_graph::memory_bytes() {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t total = memory_ ? memory_->live_bytes() : 0;
  for (const Tensor* t : inputs_) total += t->storage->capacity;
  return total;
}

bool aotirt_graph::rewritten_by_replay(const Storage& storage) const {
  if (storage.owner == Storage::Owner::Graph && memory_ && storage.graph_memory.get() == memory_.get()) return true;
  for (const Tensor* t : inputs_)  // rewritten by the copy-in of the next call's inputs
    if (t->storage.get() == &storage) return true;
  return false;
}

int aotirt_graph::own_references(const Storage& storage) const {
  int own = 0;
  for (const Tensor* t : inputs_) own += t->storage.get() == &storage ? 1 : 0;
  for (const Tensor* t : outputs_) own += t->storage.get() == &storage ? 1 : 0;
  return own;
}

bool aotirt_graph::outputs_in_use() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Tensor* t : outputs_) {
    const Storage& storage = *t->storage;
    // Each tensor holds one reference to its storage; every other one is
    // someone else's tensor (an alias handed out, a view of it, a DLPack
    // export's).
    if (rewritten_by_replay(storage) && storage.ref_count() != own_references(storage)) return true;
  }
  return false;
}

aotirt_status aotirt_graph::order_after_output_users() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Tensor* t : outputs_)
    if (rewritten_by_replay(*t->storage)) AOTIRT_TRY(t->storage->order_users_before(stream_.get()));
  return AOTIRT_OK;
}

aotirt_status aotirt_graph::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  cudaError_t destroyed = cudaSuccess;
  if (exec_) {
    // Not a wait: an executable graph destroyed with launches still queued
    // is released by CUDA once they are done.
    destroyed = cudaGraphExecDestroy(exec_);
    exec_ = nullptr;
  }
  // The static inputs go back stream-ordered on the launch stream, after the
  // last launch; the graph's memory once no static output is in use either.
  for (Tensor* t : outputs_) delete t;
  outputs_.clear();
  for (Tensor* t : inputs_) delete t;
  inputs_.clear();
  memory_.reset();
  if (destroyed != cudaSuccess) return fail_cuda(destroyed, "cudaGraphExecDestroy");
  return AOTIRT_OK;
}
