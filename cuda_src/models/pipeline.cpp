#include "pipeline.h"

#include <algorithm>
#include <cstring>
#include <string>

#if defined(AOTIRT_MODEL_CUDA)
#include <cuda_runtime_api.h>
#endif

// Weights files are little-endian; the blob is copied as it is.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "weights files are little-endian float32");

namespace pipeline {
namespace {

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

}  // namespace

std::unique_ptr<model::State> load_weights(const model::Device& device, const Layout& layout,
                                           const uint8_t* blob) {
  std::vector<int64_t> offsets;
  int64_t total = 0;
  for (const WeightSpec& w : layout) {
    offsets.push_back(total);
    int64_t n = 1;
    for (int64_t s : w.shape) n *= s;
    total += n;
  }
  model::Tensor storage = model::empty_like_shape({total}, aoti_torch_dtype_float32(), device);
  const size_t bytes = static_cast<size_t>(total) * sizeof(float);
#if defined(AOTIRT_MODEL_CUDA)
  void* stream = nullptr;
  model::check_shim(aoti_torch_get_current_cuda_stream(device.index, &stream), "aoti_torch_get_current_cuda_stream");
  cudaError_t err = cudaMemcpyAsync(storage.data(), blob, bytes, cudaMemcpyHostToDevice,
                                    static_cast<cudaStream_t>(stream));
  if (err != cudaSuccess)
    model::fail(std::string("uploading the weights (cudaMemcpyAsync) failed: ") + cudaGetErrorName(err) + ": " +
                cudaGetErrorString(err));
#else
  std::memcpy(storage.data(), blob, bytes);
#endif
  return std::unique_ptr<model::State>(new Weights(std::move(storage), offsets));
}

const Weights& loaded_weights(const model::State* state) {
  if (!state) model::fail("weights not loaded: call update_constants_from_blob");
  return static_cast<const Weights&>(*state);
}

void check_input(const model::Tensor& t, size_t index, const char* model_name, int32_t dtype,
                 std::initializer_list<int64_t> shape) {
  auto which = [&] { return "input " + std::to_string(index) + " (" + model::spec().input_names[index] + ")"; };
  if (t.dtype() != dtype)
    model::fail(which() + ": " + model_name + " takes " + dtype_name(dtype) + ", got " + dtype_name(t.dtype()));
  const std::vector<int64_t> sizes = t.sizes();
  if (!std::equal(sizes.begin(), sizes.end(), shape.begin(), shape.end()))
    model::fail(which() + " has shape " + model::shape_string(sizes) + ", " + model_name + " takes " +
                model::shape_string(shape));
  if (!t.is_contiguous()) model::fail(which() + " is not contiguous");
}

void check_kernel(int status, const char* kernel) {
  if (status == 0) return;
#if defined(AOTIRT_MODEL_CUDA)
  const cudaError_t err = static_cast<cudaError_t>(status);
  model::fail(std::string(kernel) + " kernel launch failed: " + cudaGetErrorName(err) + ": " +
              cudaGetErrorString(err));
#else
  model::fail(std::string(kernel) + " kernel failed with status " + std::to_string(status));
#endif
}

}  // namespace pipeline

namespace model {

// The same for both models: only the layout differs.
void update_constants(const Device& device, std::unique_ptr<State>& state, const uint8_t* blob) {
  state = pipeline::load_weights(device, pipeline::layout(), blob);
}

uint64_t constants_blob_size() {
  uint64_t values = 0;
  for (const pipeline::WeightSpec& w : pipeline::layout()) {
    uint64_t n = 1;
    for (int64_t s : w.shape) n *= static_cast<uint64_t>(s);
    values += n;
  }
  return values * sizeof(float);
}

}  // namespace model
