// A minimal AOTInductor model container for aotirt's example models.
//
// container.cpp exports the container C ABI (interface.h) the way an
// AOTInductor library does; a model file supplies its spec and its run. Like
// generated code, models reach tensors only through the aoti_torch_* shims.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "aotirt/aoti_abi.h"
#include "aotirt/shim.h"

namespace model {

// The device a container was created for.
struct Device {
  int32_t type;   // aoti_torch_device_type_cpu() or _cuda()
  int32_t index;
  bool is_cuda() const { return type == aoti_torch_device_type_cuda(); }
};

// Owns one AtenTensorHandle, like torch's RAIIAtenTensorHandle.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(AtenTensorHandle h) : h_(h) {}
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  Tensor(Tensor&& o) noexcept : h_(o.h_) { o.h_ = nullptr; }
  Tensor& operator=(Tensor&& o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  ~Tensor() { if (h_) aoti_torch_delete_tensor_object(h_); }
  AtenTensorHandle get() const { return h_; }
  AtenTensorHandle release() { AtenTensorHandle h = h_; h_ = nullptr; return h; }

  int32_t dtype() const;
  int32_t device_type() const;
  std::vector<int64_t> sizes() const;
  int64_t numel() const;
  bool is_contiguous() const;
  void* data() const;

 private:
  AtenTensorHandle h_ = nullptr;
};

// Throws the error a failed run reports (as AOTInductorGetLastError).
[[noreturn]] inline void fail(const std::string& message) { throw std::runtime_error(message); }
// Throws if a shim failed.
void check_shim(AOTITorchError err, const char* call);

std::string shape_string(const std::vector<int64_t>& sizes);
std::string dtype_name(int32_t dtype);  // "float32", ...
Tensor empty_like_shape(const std::vector<int64_t>& sizes, int32_t dtype, const Device& device);

// Whether this library is the CUDA build (nvcc with AOTIRT_MODEL_CUDA).
#if defined(AOTIRT_MODEL_CUDA)
inline constexpr bool kBuiltForCuda = true;
#else
inline constexpr bool kBuiltForCuda = false;
#endif

// What a model file defines.
struct Spec {
  std::vector<const char*> input_names;
  std::vector<const char*> output_names;
  bool built_for_cuda;
};
const Spec& spec();
// Runs once: `inputs` are owned by the callee; fills `outputs`.
void run(const Device& device, std::vector<Tensor>& inputs, std::vector<Tensor>& outputs, void* stream);

// Models with constants (weights) are built with AOTIRT_MODEL_HAS_STATE:
// they define constant_specs() (constant_buffers.h) and the run() below
// instead of the one above, and their container holds the constants in two
// buffers, exporting the container ABI's constant functions as torch's do.
// Stateless models such as add_mul define only run() above. Only
// container.cpp may test the macro: setup.py's CUDA builds pass it to no
// other source (STATE_SOURCES).
class ConstantValues;
// As run() above, with the active buffer's constants (all loaded).
void run(const Device& device, const ConstantValues& constants, std::vector<Tensor>& inputs,
         std::vector<Tensor>& outputs, void* stream);

}  // namespace model
