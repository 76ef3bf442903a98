#include "runtime/handle.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "aotirt/shim.h"
#include "runtime/auto_graphs.h"  // the complete type ~aotirt_handle destroys
#include "runtime/elf_check.h"
#include "runtime/errors.h"
#include "runtime/model_inputs.h"

namespace aotirt {

// The shim table (include/aotirt/shim_table.h). Each name is checked against
// its declaration in aotirt/shim.h: a line without one does not compile.
const ShimEntry kShims[] = {
#define AOTIRT_SHIM(name, family, devices) {(static_cast<void>(sizeof(&::name)), #name), family, devices},
#include "aotirt/shim_table.h"
};
const size_t kNumShims = sizeof(kShims) / sizeof(kShims[0]);

namespace {

// A model library built without libtorch leaves the aoti_torch_* shims and
// its cudart calls undefined and resolves them from the process. Our own
// library and cudart were loaded RTLD_LOCAL (as every Python extension's
// dependencies are), so promote both to global before the first model opens.
aotirt_status make_runtime_global() {
  static std::once_flag once;
  static aotirt_status status = AOTIRT_OK;
  static std::string message;
  std::call_once(once, [] {
    const void* anchors[] = {reinterpret_cast<const void*>(&aotirt_handle_open),
                             reinterpret_cast<const void*>(&cudaGetDevice)};
    for (const void* anchor : anchors) {
      Dl_info info{};
      if (!dladdr(anchor, &info) || !info.dli_fname) continue;  // statically linked: already visible
      if (!dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD)) {
        status = AOTIRT_ERROR_AOTI;
        message = std::string("could not make ") + info.dli_fname + " globally visible: " + dlerror();
        return;
      }
    }
  });
  if (status != AOTIRT_OK) return fail(status, message);
  return AOTIRT_OK;
}

// Names every aoti_torch_* function the library needs that libaotirt does not
// implement (is not in the shim table): better one clear error at open than a
// crash at the first call.
aotirt_status check_shims_available(const std::string& path) {
  std::vector<std::string> needed;
  AOTIRT_TRY(undefined_symbols(path, "aoti_torch_", &needed));
  // Never destroyed: a handle may be opened while the process exits.
  static const auto* implemented = [] {
    auto* names = new std::unordered_set<std::string_view>();
    for (const ShimEntry& shim : kShims) names->insert(shim.name);
    return names;
  }();
  std::string missing;
  size_t count = 0;
  for (const std::string& name : needed) {
    if (implemented->count(name)) continue;
    missing += (missing.empty() ? "" : ", ") + name;
    ++count;
  }
  if (count == 0) return AOTIRT_OK;
  return fail(AOTIRT_ERROR_AOTI, path + " needs " + std::to_string(count) +
                                     " aoti_torch_* function(s) that aotirt does not implement: " + missing);
}

std::string directory_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace
}  // namespace aotirt

using namespace aotirt;

aotirt_handle::aotirt_handle(std::string path, int32_t device_type, int32_t device_index)
    : path_(std::move(path)), device_type_(device_type), device_index_(device_index) {}

aotirt_handle::~aotirt_handle() { close(); }

void aotirt_handle::set_auto_graphs(std::unique_ptr<AutoGraphs> graphs) { auto_graphs_ = std::move(graphs); }

aotirt_status aotirt_handle::open_cpu(const std::string& path, aotirt_handle** out) {
  auto* handle = new (std::nothrow) aotirt_handle(path, AOTIRT_DEVICE_CPU, 0);
  if (!handle) return fail(AOTIRT_ERROR_MEMORY, "out of host memory");
  aotirt_status status = handle->load("cpu");
  if (status != AOTIRT_OK) {
    delete handle;
    return status;
  }
  *out = handle;
  return AOTIRT_OK;
}

aotirt_status aotirt_handle::load(const std::string& device_str) {
  // Resolved once, and every step below (the checks, dlopen, the cubin
  // folder) uses that one absolute path: a name without a slash would be
  // checked as ./name but looked up by dlopen on the library search path.
  char resolved[PATH_MAX];
  if (path_.empty() || !realpath(path_.c_str(), resolved))
    return fail(AOTIRT_ERROR_AOTI, "cannot open model library " + path_ + ": " +
                                       (path_.empty() ? "the path is empty" : std::strerror(errno)));
  path_ = resolved;
  AOTIRT_TRY(check_shared_library(path_));
  AOTIRT_TRY(check_shims_available(path_));
  AOTIRT_TRY(make_runtime_global());
  enable_generated_input_checks();

  // RTLD_LOCAL: two models may define the same internal symbols.
  // RTLD_NODELETE: a model library is never unmapped, even after its handle
  // closes. Unloading one is unsafe: its OpenMP worker threads (libgomp, a
  // dependency that would go with it) may still be spinning, its kernels may
  // still be queued on a stream, and thread-local destructors may still point
  // into it. Reopening the same file maps nothing new.
  library_ = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!library_) return fail(AOTIRT_ERROR_AOTI, "cannot load model library " + path_ + ": " + dlerror());
  AOTIRT_TRY(resolve_symbols());

  AOTIRT_TRY(before_run(stream()));
  clear_error();
  std::string cubin_dir = directory_of(path_);
  AOTIRuntimeError created = api_.create(&container_, 1, device_str.c_str(), cubin_dir.c_str());
  after_run();
  if (created != 0 || !container_) {
    container_ = nullptr;
    return model_failure("AOTInductorModelContainerCreateWithDevice", "for device \"" + device_str + "\"");
  }
  if (api_.num_inputs(container_, &num_inputs_) != 0) return model_failure("AOTInductorModelContainerGetNumInputs");
  if (api_.num_outputs(container_, &num_outputs_) != 0) return model_failure("AOTInductorModelContainerGetNumOutputs");
  weights_ = inspect_weights(api_, library_, container_);
  constants_.read(api_, container_, !weights_.missing);
  const char* name = nullptr;
  if (api_.input_name)
    for (size_t i = 0; i < num_inputs_; ++i)
      input_names_.push_back(api_.input_name(container_, i, &name) == 0 && name ? name : "");
  if (api_.output_name)
    for (size_t i = 0; i < num_outputs_; ++i)
      output_names_.push_back(api_.output_name(container_, i, &name) == 0 && name ? name : "");
  return AOTIRT_OK;
}

aotirt_status aotirt_handle::resolve_symbols() {
  // The first five are required; the others stay null when absent.
  struct Symbol {
    const char* name;
    void** slot;
    bool required;
  } symbols[] = {
      {"AOTInductorModelContainerCreateWithDevice", reinterpret_cast<void**>(&api_.create), true},
      {"AOTInductorModelContainerDelete", reinterpret_cast<void**>(&api_.destroy), true},
      {"AOTInductorModelContainerGetNumInputs", reinterpret_cast<void**>(&api_.num_inputs), true},
      {"AOTInductorModelContainerGetNumOutputs", reinterpret_cast<void**>(&api_.num_outputs), true},
      {"AOTInductorModelContainerRun", reinterpret_cast<void**>(&api_.run), true},
      {"AOTInductorModelContainerRunSingleThreaded", reinterpret_cast<void**>(&api_.run_single_threaded), false},
      {"AOTInductorModelContainerGetInputName", reinterpret_cast<void**>(&api_.input_name), false},
      {"AOTInductorModelContainerGetOutputName", reinterpret_cast<void**>(&api_.output_name), false},
      {"AOTInductorModelContainerGetCallSpec", reinterpret_cast<void**>(&api_.call_spec), false},
      {"AOTInductorModelUpdateConstantsFromBlob", reinterpret_cast<void**>(&api_.update_constants_from_blob), false},
      {"AOTInductorGetLastError", reinterpret_cast<void**>(&api_.last_error), false},
      {"AOTInductorModelContainerGetNumConstants", reinterpret_cast<void**>(&api_.num_constants), false},
      {"AOTInductorModelContainerGetConstantsBlobSize", reinterpret_cast<void**>(&api_.constants_blob_size), false},
      {"AOTInductorModelContainerGetConstantDataSize", reinterpret_cast<void**>(&api_.constant_data_size), false},
      {"AOTInductorModelContainerGetConstantFromFolded", reinterpret_cast<void**>(&api_.constant_from_folded), false},
      {"AOTInductorModelContainerExtractConstantsMapEntries", reinterpret_cast<void**>(&api_.extract_constants),
       false},
      {"AOTInductorModelContainerGetConstantName", reinterpret_cast<void**>(&api_.constant_name), false},
      {"AOTInductorModelContainerGetConstantOriginalFQN", reinterpret_cast<void**>(&api_.constant_fqn), false},
      {"AOTInductorModelContainerGetConstantType", reinterpret_cast<void**>(&api_.constant_type), false},
      {"AOTInductorModelContainerGetConstantDtype", reinterpret_cast<void**>(&api_.constant_dtype), false},
      {"AOTInductorModelContainerExtractConstantsMap", reinterpret_cast<void**>(&api_.extract_constants_map),
       false},
      {"AOTInductorModelContainerUpdateUserManagedConstantBufferPairs",
       reinterpret_cast<void**>(&api_.update_user_managed), false},
      {"AOTInductorModelContainerSwapConstantBuffer", reinterpret_cast<void**>(&api_.swap_constants), false},
  };
  std::string missing;
  for (const Symbol& symbol : symbols) {
    *symbol.slot = dlsym(library_, symbol.name);
    if (!*symbol.slot && symbol.required) missing += (missing.empty() ? "" : ", ") + std::string(symbol.name);
  }
  if (!missing.empty())
    return fail(AOTIRT_ERROR_AOTI, path_ + " is not an AOTInductor model library: it does not export " + missing);
  return AOTIRT_OK;
}

aotirt_status aotirt_handle::constants_blob_size(uint64_t* bytes, bool* exact) const {
  if (weights_.size == WeightsFacts::Size::Unknown)
    return fail(AOTIRT_ERROR_VALUE, path_ + " does not say how large its weights blob is" +
                                        (weights_.ignores_blob.empty() ? "" : ": " + weights_.ignores_blob));
  *bytes = weights_.bytes;
  *exact = weights_.size == WeightsFacts::Size::Exact;
  return AOTIRT_OK;
}

aotirt_status aotirt_handle::model_failure(const char* call, const std::string& detail) {
  // The most specific reason first: the model's own, then a shim's.
  std::string reason;
  const char* model_message = nullptr;
  if (api_.last_error && api_.last_error(&model_message) == 0 && model_message && *model_message)
    reason = model_message;
  else if (*aotirt_last_error_message())
    reason = aotirt_last_error_message();
  else
    reason = "the model gave no reason (it may have printed one to stderr)";
  std::string message = path_ + ": " + call + (detail.empty() ? "" : " " + detail) + " failed: " + reason;
  return fail(AOTIRT_ERROR_AOTI, message);
}

aotirt_status aotirt_handle::run(Tensor* const* inputs, size_t num_inputs, Tensor** outputs, size_t num_outputs,
                                 Stream* on) {
  std::lock_guard<std::mutex> lock(run_mutex_);
  if (closed()) return fail(AOTIRT_ERROR_CLOSED, "the handle for " + path_ + " is closed");
  if (!on) on = stream();
  if (on && (device_type_ != AOTIRT_DEVICE_CUDA || on->device != device_index_))
    return fail(AOTIRT_ERROR_VALUE, "a run of " + path_ + " was queued on a stream of cuda:" +
                                        std::to_string(on->device) + ", which is not the model's device");
  if (num_inputs != num_inputs_)
    return fail(AOTIRT_ERROR_VALUE, "the model takes " + std::to_string(num_inputs_) + " inputs, got " +
                                        std::to_string(num_inputs));
  if (num_outputs != num_outputs_)
    return fail(AOTIRT_ERROR_VALUE, "the model returns " + std::to_string(num_outputs_) +
                                        " outputs, room was given for " + std::to_string(num_outputs));
  if (weights_.missing) return weights_missing(weights_, path_);

  // The model steals (deletes) its input handles, so it gets fresh aliases
  // and the caller's tensors stay valid.
  constexpr size_t kInline = 16;
  AtenTensorHandle inline_aliases[kInline];
  std::vector<AtenTensorHandle> heap_aliases;
  AtenTensorHandle* aliases = inline_aliases;
  if (num_inputs > kInline) {
    heap_aliases.resize(num_inputs);
    aliases = heap_aliases.data();
  }
  for (size_t i = 0; i < num_inputs; ++i) {
    aotirt_status status = model_input(*inputs[i], i, device_type_, device_index_, on, &aliases[i]);
    if (status != AOTIRT_OK) {
      for (size_t j = 0; j < i; ++j) delete aliases[j];
      return status;
    }
  }

  for (size_t i = 0; i < num_outputs; ++i) outputs[i] = nullptr;
  aotirt_status entered = before_run(on);
  if (entered != AOTIRT_OK) {
    for (size_t j = 0; j < num_inputs; ++j) delete aliases[j];
    return entered;
  }
  clear_error();
  auto run_fn = api_.run_single_threaded ? api_.run_single_threaded : api_.run;
  register_input_aliases(aliases, num_inputs);
  AOTIRuntimeError ran;
  {
    GeneratorScope random_numbers(&generator_);  // the random shims draw from this handle's generator
    ran = run_fn(container_, aliases, num_inputs, outputs, num_outputs,
                 reinterpret_cast<AOTInductorStreamHandle>(on ? on->handle : nullptr), nullptr);
  }
  after_run();
  std::vector<Tensor*> untaken;
  settle_input_aliases(aliases, num_inputs, ran != 0 ? &untaken : nullptr);
  if (ran != 0) {
    for (size_t i = 0; i < num_outputs; ++i) {
      for (Tensor*& left : untaken)
        if (left == outputs[i]) left = nullptr;  // handed back as an output: deleted just below
      delete outputs[i];
      outputs[i] = nullptr;
    }
    // A model that failed before taking its inputs (its input checks) did
    // not delete them: nothing else will.
    for (Tensor* left : untaken) delete left;
    const char* model_message = nullptr;
    std::string message;
    aotirt_status kind = AOTIRT_OK;
    if (api_.last_error && api_.last_error(&model_message) == 0 && model_message &&
        input_check_failure(model_message, inputs, num_inputs, input_names_, &message, &kind))
      return fail(kind, path_ + ": " + message);
    const char* call = api_.run_single_threaded ? "AOTInductorModelContainerRunSingleThreaded"
                                                : "AOTInductorModelContainerRun";
    // torch < 2.12: no AOTInductorGetLastError, the reason went to stderr
    // only. A run that failed before taking any of its inputs failed in its
    // generated input checks (or, at a first run, its constant folding).
    if (!api_.last_error && num_inputs > 0 && untaken.size() == num_inputs && !*aotirt_last_error_message())
      return fail(AOTIRT_ERROR_AOTI, inputs_refused_silently(path_, call, inputs, num_inputs, input_names_));
    return model_failure(call);
  }
  for (size_t i = 0; i < num_outputs; ++i) adopt_output(*outputs[i]);
  return AOTIRT_OK;
}

aotirt_status aotirt_handle::update_constants_from_blob(const uint8_t* blob, size_t nbytes, bool sized) {
  std::lock_guard<std::mutex> lock(run_mutex_);
  if (closed()) return fail(AOTIRT_ERROR_CLOSED, "the handle for " + path_ + " is closed");
  if (!api_.update_constants_from_blob)
    return fail(AOTIRT_ERROR_AOTI, path_ + " does not export AOTInductorModelUpdateConstantsFromBlob");
  AOTIRT_TRY(check_weights_blob(weights_, path_, nbytes, sized));
  AOTIRT_TRY(before_run(stream()));
  clear_error();
  AOTIRuntimeError updated = api_.update_constants_from_blob(container_, blob);
  after_run();
  // Even a failed update may have replaced some weights.
  constants_version_.fetch_add(1, std::memory_order_acq_rel);
  if (updated != 0)
    return model_failure("AOTInductorModelUpdateConstantsFromBlob",
                         weights_.size == WeightsFacts::Size::Unknown
                             ? "(the library does not say how large its weights blob is: the blob's " +
                                   std::to_string(nbytes) +
                                   " bytes could not be checked)"
                             : "");
  weights_.missing = false;
  constants_.library_loaded(api_, container_);
  return AOTIRT_OK;
}

aotirt_status aotirt_handle::update_constants(const char* const* keys, Tensor* const* values, const int* share,
                                              size_t n, bool inactive) {
  std::lock_guard<std::mutex> lock(run_mutex_);
  if (closed()) return fail(AOTIRT_ERROR_CLOSED, "the handle for " + path_ + " is closed");
  AOTIRT_TRY(before_run(stream()));
  ConstantsContext ctx{api_, container_, path_, device_type_, device_index_, stream()};
  aotirt_status status = constants_.update(ctx, keys, values, share, n, inactive);
  after_run();
  if (status != AOTIRT_OK || inactive) return status;
  // Graphs captured before read the old weights' addresses.
  constants_version_.fetch_add(1, std::memory_order_acq_rel);
  if (constants_.active_complete()) weights_.missing = false;
  return AOTIRT_OK;
}

aotirt_status aotirt_handle::swap_constants() {
  std::lock_guard<std::mutex> lock(run_mutex_);
  if (closed()) return fail(AOTIRT_ERROR_CLOSED, "the handle for " + path_ + " is closed");
  AOTIRT_TRY(before_run(stream()));
  ConstantsContext ctx{api_, container_, path_, device_type_, device_index_, stream()};
  aotirt_status status = constants_.swap(ctx);
  after_run();
  if (status != AOTIRT_OK) return status;
  constants_version_.fetch_add(1, std::memory_order_acq_rel);
  weights_.missing = !constants_.active_complete();
  return AOTIRT_OK;
}

aotirt_status aotirt_handle::constant_value(size_t i, Tensor** out) {
  std::lock_guard<std::mutex> lock(run_mutex_);
  if (closed()) return fail(AOTIRT_ERROR_CLOSED, "the handle for " + path_ + " is closed");
  if (i >= constants_.size())
    return fail(AOTIRT_ERROR_VALUE, "constant " + std::to_string(i) + " is out of range: " + path_ + " has " +
                                        std::to_string(constants_.size()));
  const Tensor* value = constants_.active_value(i);
  if (!value)
    return fail(AOTIRT_ERROR_VALUE, path_ + ": the active value of constant '" + constants_.at(i).name +
                                        "' is the library's own (from the library file or a weights blob), not "
                                        "aotirt's: only weights loaded by name (update_constants, "
                                        "aotirt.load(weights=...)) can be shared with another handle");
  *out = alias(*value);
  if (!*out) return fail(AOTIRT_ERROR_MEMORY, "out of host memory");
  return AOTIRT_OK;
}

aotirt_status aotirt_handle::close() {
  std::lock_guard<std::mutex> lock(run_mutex_);
  aotirt_status status = AOTIRT_OK;
  if (container_) {
    // after_run restores what before_run replaced, so only after one that
    // succeeded (else it would clear the thread's current stream).
    const bool entered = before_run(stream()) == AOTIRT_OK;
    if (api_.destroy(container_) != 0) status = model_failure("AOTInductorModelContainerDelete");
    if (entered) after_run();
    container_ = nullptr;
  }
  if (library_) {
    unload_library();
    library_ = nullptr;
  }
  return status;
}

void aotirt_handle::unload_library() {
  // Drops our reference; RTLD_NODELETE keeps the code mapped (see load()).
  dlclose(library_);
}

namespace aotirt {

aotirt_status CudaHandle::open(const std::string& path, int device, Stream* stream, AotiHandle** out) {
  if (aotirt_status checked = check_cuda_device(device); checked != AOTIRT_OK) {
    // CUDA itself failed (no driver, no GPU): say what for.
    if (checked == AOTIRT_ERROR_CUDA) return fail_cuda(static_cast<cudaError_t>(aotirt_last_error_cuda_code()),
                                                       "cudaGetDeviceCount, opening a CUDA handle for " + path);
    return checked;
  }
  StreamRef chosen;
  if (stream) {
    if (stream->device != device)
      return fail(AOTIRT_ERROR_VALUE, "the stream is on cuda:" + std::to_string(stream->device) +
                                          ", the handle on cuda:" + std::to_string(device));
    chosen = StreamRef::share(stream);
    // From now on an adopted stream allocates from a block cache, as
    // aotirt's own streams do (stream.h: keep_cache); the load's own
    // allocations too.
    chosen->keep_cache();
  } else {
    AOTIRT_TRY(shared_stream(device, &chosen));
  }
  auto* handle = new (std::nothrow) CudaHandle(path, device, std::move(chosen));
  if (!handle) return fail(AOTIRT_ERROR_MEMORY, "out of host memory");
  aotirt_status status = handle->load("cuda:" + std::to_string(device));
  if (status != AOTIRT_OK) {
    delete handle;
    return status;
  }
  *out = handle;
  return AOTIRT_OK;
}

aotirt_status CudaHandle::before_run(Stream* on) {
  AOTIRT_TRY(check_device_usable(device_index()));
  int current = 0;
  AOTIRT_CUDA_TRY(cudaGetDevice(&current));
  if (current != device_index()) {
    AOTIRT_CUDA_TRY(cudaSetDevice(device_index()));
    previous_device_ = current;
  }
  previous_stream_ = current_stream();
  set_current_stream(on);
  return AOTIRT_OK;
}

void CudaHandle::after_run() {
  set_current_stream(previous_stream_);
  previous_stream_ = nullptr;
  restore_device(previous_device_);  // also after a failed run: the thread's device is the caller's
  previous_device_ = -1;
}

void CudaHandle::adopt_output(Tensor& output) {
  if (output.stream.get() != stream_.get()) output.stream = stream_;
}


}  // namespace aotirt
