// Handles: one loaded model library and its container.
//
// aotirt_handle (AotiHandle) is device-agnostic: it loads a library that
// exports the AOTInductor container C ABI and runs it. CudaHandle adds the
// stream: every run is queued on it and returns as soon as it is queued.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "aotirt/aoti_abi.h"
#include "aotirt/aotirt.h"
#include "runtime/constants.h"
#include "runtime/container_api.h"
#include "runtime/model_checks.h"
#include "runtime/rng.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace aotirt {

class AutoGraphs;  // auto_graphs.h

// One line of the shim table (include/aotirt/shim_table.h): an aoti_torch_*
// function libaotirt implements, its family and its devices.
struct ShimEntry {
  const char* name;
  const char* family;
  const char* devices;
};
// The table, in its order; a model library's needs are checked against it.
extern const ShimEntry kShims[];
extern const size_t kNumShims;


}  // namespace aotirt

struct aotirt_handle {
 public:
  // A handle for a library built for the CPU: runs with a null stream.
  static aotirt_status open_cpu(const std::string& path, aotirt_handle** out);
  virtual ~aotirt_handle();

  // `on` NULL: the handle's own stream. A CUDA graph capture (graph.cpp)
  // passes its private capture stream; the outputs still belong to the
  // handle's stream, where the graph is launched.
  aotirt_status run(aotirt::Tensor* const* inputs, size_t num_inputs, aotirt::Tensor** outputs,
                    size_t num_outputs, aotirt::Stream* on = nullptr);
  aotirt_status close();
  // `nbytes` the blob's size, or `sized` false when the caller does not know
  // it (the C API's unsized entry point): checked against WeightsFacts.
  aotirt_status update_constants_from_blob(const uint8_t* blob, size_t nbytes, bool sized);
  // The blob size the library reads: AOTIRT_OK with `exact` telling whether
  // it is the size (else a lower bound); AOTIRT_ERROR_VALUE when unknown.
  aotirt_status constants_blob_size(uint64_t* bytes, bool* exact) const;
  // Constants by name (runtime/constants.h): the table is read when the
  // container is made and changes only under the run lock.
  const aotirt::ConstantTable& constants() const { return constants_; }
  // Replaces constants `keys[i]` (names or FQNs) by `values[i]`; `share[i]`
  // lets a value on the model's device be kept without a copy.
  aotirt_status update_constants(const char* const* keys, aotirt::Tensor* const* values, const int* share, size_t n,
                                 bool inactive);
  aotirt_status swap_constants();
  // An alias of constant `i`'s active value when aotirt owns it (shareable
  // with another handle); AOTIRT_ERROR_VALUE when the library owns it.
  aotirt_status constant_value(size_t i, aotirt::Tensor** out);
  // The lock run(), close() and update_constants_from_blob() take: held, the
  // container stays open with the same weights. For work that uses them
  // without run() (a CUDA graph's launch); never held across run().
  std::unique_lock<std::mutex> hold_open() { return std::unique_lock<std::mutex>(run_mutex_); }

  const std::string& path() const { return path_; }
  int32_t device_type() const { return device_type_; }
  int32_t device_index() const { return device_index_; }
  bool closed() const { return container_ == nullptr; }
  size_t num_inputs() const { return num_inputs_; }
  size_t num_outputs() const { return num_outputs_; }
  const char* input_name(size_t i) const { return name_at(input_names_, i); }
  const char* output_name(size_t i) const { return name_at(output_names_, i); }
  virtual aotirt::Stream* stream() const { return nullptr; }
  // Changes each time the model's weights are replaced: a CUDA graph
  // captured before reads the old weights' addresses, so it refuses to replay.
  uint64_t constants_version() const { return constants_version_.load(std::memory_order_acquire); }
  // The automatic CUDA graphs of aotirt_handle_enable_graphs (auto_graphs.h),
  // or nullptr: aotirt_handle_run's one check. Set once, before the first run.
  aotirt::AutoGraphs* auto_graphs() const { return auto_graphs_.get(); }
  void set_auto_graphs(std::unique_ptr<aotirt::AutoGraphs> graphs);
  // The random shims' generator (runtime/rng.h), current during each run.
  aotirt::Generator& generator() { return generator_; }

 protected:
  aotirt_handle(std::string path, int32_t device_type, int32_t device_index);
  // dlopen, resolve, create the container. `device_str` is "cpu" or "cuda:N".
  aotirt_status load(const std::string& device_str);

  // Hooks for the CUDA handle; the CPU handle needs none of them.
  // `on`: the stream the run is queued on (nullptr on the CPU).
  virtual aotirt_status before_run(aotirt::Stream* /*on*/) { return AOTIRT_OK; }
  virtual void after_run() {}
  virtual void adopt_output(aotirt::Tensor&) {}
  void unload_library();

  void* library_ = nullptr;

 private:
  aotirt_status resolve_symbols();
  aotirt_status model_failure(const char* call, const std::string& detail = "");
  static const char* name_at(const std::vector<std::string>& names, size_t i) {
    return i < names.size() && !names[i].empty() ? names[i].c_str() : nullptr;
  }

  std::string path_;
  int32_t device_type_;
  int32_t device_index_;
  aotirt::ContainerApi api_;
  AOTInductorModelContainerHandle container_ = nullptr;
  size_t num_inputs_ = 0;
  size_t num_outputs_ = 0;
  std::vector<std::string> input_names_;
  std::vector<std::string> output_names_;
  std::atomic<uint64_t> constants_version_{0};
  aotirt::WeightsFacts weights_;
  aotirt::ConstantTable constants_;
  // A container with one model instance is not safe to run from two threads
  // at once; this makes concurrent run() calls take turns.
  std::mutex run_mutex_;
  aotirt::Generator generator_;
  // Destroyed after close(): its graphs borrow this handle.
  std::unique_ptr<aotirt::AutoGraphs> auto_graphs_;
};

namespace aotirt {

using AotiHandle = aotirt_handle;

class CudaHandle : public AotiHandle {
 public:
  // `stream` NULL: the device's shared stream.
  static aotirt_status open(const std::string& path, int device, Stream* stream, AotiHandle** out);
  // Closes here, not in the base destructor: there the CUDA overrides that
  // close needs are no longer dispatched to.
  ~CudaHandle() override { close(); }
  Stream* stream() const override { return stream_.get(); }

 private:
  CudaHandle(std::string path, int device, StreamRef stream)
      : AotiHandle(std::move(path), AOTIRT_DEVICE_CUDA, device), stream_(std::move(stream)) {}
  aotirt_status before_run(Stream* on) override;
  void after_run() override;
  void adopt_output(Tensor& output) override;

  StreamRef stream_;
  // What before_run replaced, restored by after_run.
  int previous_device_ = -1;
  Stream* previous_stream_ = nullptr;
};

}  // namespace aotirt
