#include "constant_buffers.h"

#include <cstring>
#include <utility>

#if defined(AOTIRT_MODEL_CUDA)
#include <cuda_runtime_api.h>
#endif

// Weights blobs are little-endian; a blob is copied as it is.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "weights blobs are little-endian float32");

namespace model {
namespace {

int64_t count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d] > 1 ? shape[d] : 1;
  }
  return strides;
}

}  // namespace

ConstantBuffers::ConstantBuffers(const Device& device) : device_(device), specs_(constant_specs()) {
  for (size_t i = 0; i < specs_.size(); ++i) index_.emplace(specs_[i].name, i);
  for (Buffer& buffer : buffers_) {
    buffer.tensors.assign(specs_.size(), nullptr);
    buffer.owned.assign(specs_.size(), false);
    buffer.values.data_.assign(specs_.size(), nullptr);
  }
}

ConstantBuffers::~ConstantBuffers() {
  // Only our own tensors: user-managed ones belong to the caller. Each free
  // is stream-ordered, after the runs already queued.
  for (Buffer& buffer : buffers_)
    for (size_t i = 0; i < buffer.tensors.size(); ++i)
      if (buffer.owned[i] && buffer.tensors[i]) aoti_torch_delete_tensor_object(buffer.tensors[i]);
}

const ConstantSpec& ConstantBuffers::spec(size_t i) const {
  if (i >= specs_.size())
    fail("constant index " + std::to_string(i) + " is out of range: the model has " + std::to_string(specs_.size()) +
         " constants");
  return specs_[i];
}

uint64_t ConstantBuffers::data_size(size_t i) const {
  return static_cast<uint64_t>(count(spec(i).shape)) * sizeof(float);
}

uint64_t ConstantBuffers::blob_size() const {
  uint64_t bytes = 0;
  for (size_t i = 0; i < specs_.size(); ++i) bytes += data_size(i);
  return bytes;
}

void ConstantBuffers::set(Buffer& buffer, size_t i, AtenTensorHandle tensor, bool owned) {
  if (buffer.owned[i] && buffer.tensors[i] && buffer.tensors[i] != tensor)
    aoti_torch_delete_tensor_object(buffer.tensors[i]);
  buffer.tensors[i] = tensor;
  buffer.owned[i] = owned;
  void* data = nullptr;
  check_shim(aoti_torch_get_data_ptr(tensor, &data), "aoti_torch_get_data_ptr");
  buffer.values.data_[i] = static_cast<const float*>(data);
  bool complete = true;
  for (AtenTensorHandle t : buffer.tensors) complete = complete && t;
  buffer.values.complete_ = complete;
}

void ConstantBuffers::load_blob(const uint8_t* blob) {
  if (!blob) fail("the weights blob is NULL");
  const int64_t total = static_cast<int64_t>(blob_size() / sizeof(float));
  Tensor storage = empty_like_shape({total}, aoti_torch_dtype_float32(), device_);
  const size_t bytes = static_cast<size_t>(total) * sizeof(float);
#if defined(AOTIRT_MODEL_CUDA)
  // One copy on the current stream. The blob is pageable host memory, which
  // CUDA has consumed when the call returns; nothing waits for the GPU.
  void* stream = nullptr;
  check_shim(aoti_torch_get_current_cuda_stream(device_.index, &stream), "aoti_torch_get_current_cuda_stream");
  cudaError_t err = cudaMemcpyAsync(storage.data(), blob, bytes, cudaMemcpyHostToDevice,
                                    static_cast<cudaStream_t>(stream));
  if (err != cudaSuccess)
    fail(std::string("uploading the weights (cudaMemcpyAsync) failed: ") + cudaGetErrorName(err) + ": " +
         cudaGetErrorString(err));
#else
  std::memcpy(storage.data(), blob, bytes);
#endif
  // Every view made before the buffer changes: a failure leaves it as it was.
  std::vector<Tensor> views;
  int64_t offset = 0;
  for (const ConstantSpec& s : specs_) {
    const std::vector<int64_t> strides = contiguous_strides(s.shape);
    AtenTensorHandle view = nullptr;
    check_shim(aoti_torch__reinterpret_tensor(storage.get(), static_cast<int64_t>(s.shape.size()), s.shape.data(),
                                              strides.data(), offset, &view),
               "aoti_torch__reinterpret_tensor");
    views.emplace_back(view);
    offset += count(s.shape);
  }
  // The views keep the storage alive; each constant's goes with the last.
  Buffer& buffer = buffers_[active_];
  for (size_t i = 0; i < views.size(); ++i) set(buffer, i, views[i].release(), true);
}

std::string ConstantBuffers::mismatch(size_t i, AtenTensorHandle tensor) const {
  if (!tensor) return "its tensor is NULL";
  Tensor borrowed(tensor);  // borrowed, not owned: released below, never deleted
  std::string why;
  try {
    int32_t index = 0;
    check_shim(aoti_torch_get_device_index(tensor, &index), "aoti_torch_get_device_index");
    const std::vector<int64_t> sizes = borrowed.sizes();
    if (borrowed.device_type() != device_.type || (device_.is_cuda() && index != device_.index))
      why = "it is on another device than the model (" +
            (device_.is_cuda() ? "cuda:" + std::to_string(device_.index) : std::string("cpu")) + ")";
    else if (borrowed.dtype() != aoti_torch_dtype_float32())
      why = "it is " + dtype_name(borrowed.dtype()) + ", the model's is float32";
    else if (sizes != specs_[i].shape)
      why = "it has shape " + shape_string(sizes) + ", the model's is " + shape_string(specs_[i].shape);
    else if (!borrowed.is_contiguous())
      why = "it is not contiguous";
  } catch (...) {
    borrowed.release();
    throw;
  }
  borrowed.release();
  return why;
}

void ConstantBuffers::update_user_managed(const AOTInductorConstantMapEntry* pairs, size_t num_pairs,
                                          bool use_inactive, bool validate_full_update) {
  if (num_pairs && !pairs) fail("the constant pairs are NULL");
  std::vector<AtenTensorHandle> given(specs_.size(), nullptr);
  std::string problems;
  auto problem = [&](const std::string& text) { problems += (problems.empty() ? "" : "; ") + text; };
  for (size_t k = 0; k < num_pairs; ++k) {
    const std::string name = pairs[k].name ? pairs[k].name : "";
    auto it = index_.find(name);
    // torch skips names it does not have; a caller who misspells one would
    // then run with the old value, unknowingly.
    if (it == index_.end()) {
      problem("'" + name + "' is not a constant of the model");
      continue;
    }
    const std::string why = mismatch(it->second, pairs[k].handle);
    if (!why.empty()) problem("constant '" + name + "': " + why);
    given[it->second] = pairs[k].handle;
  }
  if (validate_full_update)
    for (size_t i = 0; i < specs_.size(); ++i)
      if (!given[i]) problem(std::string("cannot find constant ") + specs_[i].name + " in the given constants");
  if (!problems.empty()) fail("the constants were not updated: " + problems);
  // Every constant is a parameter: one left out keeps its value in this
  // buffer (torch copies only buffers and tensor constants across).
  Buffer& buffer = buffers_[use_inactive ? 1 - active_ : active_];
  for (size_t i = 0; i < specs_.size(); ++i)
    if (given[i]) set(buffer, i, given[i], false);
}

void ConstantBuffers::extract(std::unordered_map<std::string, AtenTensorHandle>& out, bool use_inactive) const {
  const Buffer& buffer = buffers_[use_inactive ? 1 - active_ : active_];
  for (size_t i = 0; i < specs_.size(); ++i)
    if (buffer.tensors[i]) out.emplace(specs_[i].name, buffer.tensors[i]);
}

const ConstantValues& ConstantBuffers::active() const {
  const ConstantValues& values = buffers_[active_].values;
  if (!values.complete_)
    fail("weights not loaded: call update_constants_from_blob, or give every constant (update_constants)");
  return values;
}

}  // namespace model
