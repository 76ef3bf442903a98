#include "container.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>

#include "constant_buffers.h"

#define MODEL_API extern "C" __attribute__((visibility("default")))

namespace model {

int32_t Tensor::dtype() const {
  int32_t v = 0;
  check_shim(aoti_torch_get_dtype(h_, &v), "aoti_torch_get_dtype");
  return v;
}

int32_t Tensor::device_type() const {
  int32_t v = 0;
  check_shim(aoti_torch_get_device_type(h_, &v), "aoti_torch_get_device_type");
  return v;
}

std::vector<int64_t> Tensor::sizes() const {
  int64_t ndim = 0;
  int64_t* sizes = nullptr;
  check_shim(aoti_torch_get_dim(h_, &ndim), "aoti_torch_get_dim");
  check_shim(aoti_torch_get_sizes(h_, &sizes), "aoti_torch_get_sizes");
  return std::vector<int64_t>(sizes, sizes + ndim);
}

int64_t Tensor::numel() const {
  int64_t n = 0;
  check_shim(aoti_torch_get_numel(h_, &n), "aoti_torch_get_numel");
  return n;
}

bool Tensor::is_contiguous() const {
  bool v = false;
  check_shim(aoti_torch_is_contiguous(h_, &v), "aoti_torch_is_contiguous");
  return v;
}

void* Tensor::data() const {
  void* p = nullptr;
  check_shim(aoti_torch_get_data_ptr(h_, &p), "aoti_torch_get_data_ptr");
  return p;
}

void check_shim(AOTITorchError err, const char* call) {
  if (err != AOTI_TORCH_SUCCESS) fail(std::string(call) + " failed");
}

std::string shape_string(const std::vector<int64_t>& sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

std::string dtype_name(int32_t dtype) {
  if (dtype == aoti_torch_dtype_float32()) return "float32";
  if (dtype == aoti_torch_dtype_float64()) return "float64";
  if (dtype == aoti_torch_dtype_float16()) return "float16";
  if (dtype == aoti_torch_dtype_bfloat16()) return "bfloat16";
  if (dtype == aoti_torch_dtype_int64()) return "int64";
  if (dtype == aoti_torch_dtype_int32()) return "int32";
  if (dtype == aoti_torch_dtype_int16()) return "int16";
  if (dtype == aoti_torch_dtype_int8()) return "int8";
  if (dtype == aoti_torch_dtype_uint8()) return "uint8";
  if (dtype == aoti_torch_dtype_bool()) return "bool";
  return "dtype " + std::to_string(dtype);
}


Tensor empty_like_shape(const std::vector<int64_t>& sizes, int32_t dtype, const Device& device) {
  std::vector<int64_t> strides(sizes.size());
  int64_t stride = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= sizes[d] > 1 ? sizes[d] : 1;
  }
  AtenTensorHandle h = nullptr;
  check_shim(aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()), sizes.data(), strides.data(), dtype,
                                      device.type, device.index, &h),
             "aoti_torch_empty_strided");
  return Tensor(h);
}

}  // namespace model

namespace {

struct Container {
  explicit Container(const model::Device& d) : device(d) {}
  model::Device device;
#if defined(AOTIRT_MODEL_HAS_STATE)
  model::ConstantBuffers constants{device};
#endif
};

thread_local std::string last_error;

// Entry points return 0 on success; on failure the reason is kept for
// AOTInductorGetLastError, as torch's own containers do.
template <typename Body>
AOTIRuntimeError guarded(Body body) {
  try {
    body();
    last_error.clear();
    return 0;
  } catch (const std::exception& e) {
    last_error = e.what();
  } catch (...) {
    last_error = "unknown C++ exception";
  }
  return 1;
}

model::Device parse_device(const char* device_str) {
  if (!device_str) model::fail("device_str is NULL");
  if (std::strcmp(device_str, "cpu") == 0) return {aoti_torch_device_type_cpu(), 0};
  if (std::strncmp(device_str, "cuda", 4) == 0) {
    int index = 0;
    if (device_str[4] == ':') index = std::atoi(device_str + 5);
    else if (device_str[4] != '\0') model::fail(std::string("bad device string \"") + device_str + "\"");
    return {aoti_torch_device_type_cuda(), index};
  }
  model::fail(std::string("unsupported device \"") + device_str + "\"");
}

AOTIRuntimeError run_container(AOTInductorModelContainerHandle handle, AtenTensorHandle* input_handles,
                               size_t num_inputs, AtenTensorHandle* output_handles, size_t num_outputs,
                               AOTInductorStreamHandle stream) {
  // The inputs are ours from here on, whatever happens next.
  std::vector<model::Tensor> inputs;
  inputs.reserve(num_inputs);
  for (size_t i = 0; i < num_inputs; ++i) inputs.emplace_back(input_handles[i]);
  return guarded([&] {
    auto* container = reinterpret_cast<Container*>(handle);
    const model::Spec& spec = model::spec();
    if (num_inputs != spec.input_names.size())
      model::fail("expected " + std::to_string(spec.input_names.size()) + " inputs, got " + std::to_string(num_inputs));
    if (num_outputs != spec.output_names.size())
      model::fail("expected " + std::to_string(spec.output_names.size()) + " outputs, got " + std::to_string(num_outputs));
    for (size_t i = 0; i < num_inputs; ++i)
      if (inputs[i].device_type() != container->device.type)
        model::fail("input " + std::to_string(i) + " (" + spec.input_names[i] + ") is on the wrong device");
    std::vector<model::Tensor> outputs(num_outputs);
#if defined(AOTIRT_MODEL_HAS_STATE)
    model::run(container->device, container->constants.active(), inputs, outputs, stream);
#else
    model::run(container->device, inputs, outputs, stream);
#endif
    for (size_t i = 0; i < num_outputs; ++i) output_handles[i] = outputs[i].release();
  });
}

}  // namespace

MODEL_API AOTIRuntimeError AOTInductorModelContainerCreateWithDevice(AOTInductorModelContainerHandle* container_handle,
                                                                     size_t num_models, const char* device_str,
                                                                     const char* cubin_dir) {
  (void)num_models;
  (void)cubin_dir;
  return guarded([&] {
    model::Device device = parse_device(device_str);
    if (device.is_cuda() != model::spec().built_for_cuda)
      model::fail(std::string("this library was built for ") + (model::spec().built_for_cuda ? "cuda" : "cpu") +
                  ", not for \"" + device_str + "\"");
    *container_handle = reinterpret_cast<AOTInductorModelContainerHandle>(new Container(device));
  });
}

MODEL_API AOTIRuntimeError AOTInductorModelContainerDelete(AOTInductorModelContainerHandle container_handle) {
  delete reinterpret_cast<Container*>(container_handle);
  return 0;
}

MODEL_API AOTIRuntimeError AOTInductorModelContainerGetNumInputs(AOTInductorModelContainerHandle, size_t* ret) {
  *ret = model::spec().input_names.size();
  return 0;
}

MODEL_API AOTIRuntimeError AOTInductorModelContainerGetNumOutputs(AOTInductorModelContainerHandle, size_t* ret) {
  *ret = model::spec().output_names.size();
  return 0;
}

MODEL_API AOTIRuntimeError AOTInductorModelContainerGetInputName(AOTInductorModelContainerHandle, size_t i,
                                                                 const char** ret) {
  return guarded([&] {
    if (i >= model::spec().input_names.size()) model::fail("input index out of range");
    *ret = model::spec().input_names[i];
  });
}

MODEL_API AOTIRuntimeError AOTInductorModelContainerGetOutputName(AOTInductorModelContainerHandle, size_t i,
                                                                  const char** ret) {
  return guarded([&] {
    if (i >= model::spec().output_names.size()) model::fail("output index out of range");
    *ret = model::spec().output_names[i];
  });
}

MODEL_API AOTIRuntimeError AOTInductorModelContainerRun(AOTInductorModelContainerHandle handle,
                                                        AtenTensorHandle* input_handles, size_t num_inputs,
                                                        AtenTensorHandle* output_handles, size_t num_outputs,
                                                        AOTInductorStreamHandle stream, AOTIProxyExecutorHandle) {
  return run_container(handle, input_handles, num_inputs, output_handles, num_outputs, stream);
}

MODEL_API AOTIRuntimeError AOTInductorModelContainerRunSingleThreaded(
    AOTInductorModelContainerHandle handle, AtenTensorHandle* input_handles, size_t num_inputs,
    AtenTensorHandle* output_handles, size_t num_outputs, AOTInductorStreamHandle stream, AOTIProxyExecutorHandle) {
  return run_container(handle, input_handles, num_inputs, output_handles, num_outputs, stream);
}

#if defined(AOTIRT_MODEL_HAS_STATE)
// The constant functions of torch's interface.h, exported only by models
// with weights: aotirt then tells a caller that a stateless library takes no
// weights, instead of the library ignoring them. Their semantics are those
// of torch's container (model_container.h); constant_buffers.h says where
// they differ.
namespace {
model::ConstantBuffers& constants_of(AOTInductorModelContainerHandle handle) {
  if (!handle) model::fail("the container handle is NULL");
  return reinterpret_cast<Container*>(handle)->constants;
}
}  // namespace

MODEL_API AOTIRuntimeError AOTInductorModelContainerGetConstantsBlobSize(AOTInductorModelContainerHandle handle,
                                                                        uint64_t* ret_size) {
  return guarded([&] { *ret_size = constants_of(handle).blob_size(); });
}

MODEL_API AOTIRuntimeError AOTInductorModelUpdateConstantsFromBlob(AOTInductorModelContainerHandle handle,
                                                                   const uint8_t* weight_blob_ptr) {
  return guarded([&] { constants_of(handle).load_blob(weight_blob_ptr); });
}

MODEL_API AOTIRuntimeError AOTInductorModelContainerGetNumConstants(AOTInductorModelContainerHandle handle,
                                                                    size_t* num_constants) {
  return guarded([&] { *num_constants = constants_of(handle).size(); });
}

MODEL_API AOTIRuntimeError AOTInductorModelContainerGetConstantName(AOTInductorModelContainerHandle handle,
                                                                    size_t idx, const char** name) {
  return guarded([&] { *name = constants_of(handle).spec(idx).name; });
}

MODEL_API AOTIRuntimeError AOTInductorModelContainerGetConstantOriginalFQN(AOTInductorModelContainerHandle handle,
                                                                           size_t idx, const char** original_fqn) {
  return guarded([&] { *original_fqn = constants_of(handle).spec(idx).name; });
}

MODEL_API AOTIRuntimeError AOTInductorModelContainerGetConstantFromFolded(AOTInductorModelContainerHandle handle,
                                                                          size_t idx, bool* from_folded) {
  return guarded([&] {
    constants_of(handle).spec(idx);  // the index check
    *from_folded = false;
  });
}

MODEL_API AOTIRuntimeError AOTInductorModelContainerGetConstantType(AOTInductorModelContainerHandle handle,
                                                                    size_t idx, int32_t* type) {
  return guarded([&] {
    constants_of(handle).spec(idx);
    *type = model::kConstantParameter;
  });
}

MODEL_API AOTIRuntimeError AOTInductorModelContainerGetConstantDtype(AOTInductorModelContainerHandle handle,
                                                                     size_t idx, int32_t* dtype) {
  return guarded([&] {
    constants_of(handle).spec(idx);
    *dtype = aoti_torch_dtype_float32();
  });
}

MODEL_API AOTIRuntimeError AOTInductorModelContainerGetConstantDataSize(AOTInductorModelContainerHandle handle,
                                                                        size_t idx, size_t* data_size) {
  return guarded([&] { *data_size = constants_of(handle).data_size(idx); });
}

// As torch's interface.cpp: the handle is a std::unordered_map<std::string,
// AtenTensorHandle>*, filled with the buffer's tensors by FQN (added to what
// it holds; its values stay the container's).
MODEL_API AOTIRuntimeError AOTInductorModelContainerExtractConstantsMap(
    AOTInductorModelContainerHandle handle, AOTInductorConstantMapHandle constant_map_handle, bool use_inactive) {
  return guarded([&] {
    if (!constant_map_handle) model::fail("the constant map handle is NULL");
    auto* map = reinterpret_cast<std::unordered_map<std::string, AtenTensorHandle>*>(constant_map_handle);
    constants_of(handle).extract(*map, use_inactive);
  });
}

MODEL_API AOTIRuntimeError AOTInductorModelContainerUpdateUserManagedConstantBufferPairs(
    AOTInductorModelContainerHandle handle, const AOTInductorConstantMapEntry* pairs, size_t num_pairs,
    bool use_inactive, bool validate_full_update) {
  return guarded([&] { constants_of(handle).update_user_managed(pairs, num_pairs, use_inactive, validate_full_update); });
}

MODEL_API AOTIRuntimeError AOTInductorModelContainerSwapConstantBuffer(AOTInductorModelContainerHandle handle) {
  return guarded([&] { constants_of(handle).swap(); });
}
#endif

MODEL_API AOTIRuntimeError AOTInductorGetLastError(const char** error_msg) {
  *error_msg = last_error.c_str();
  return 0;
}
