// fallback_ops: a test-only model that calls the fallback shims the way an
// AOTInductor library built without libtorch does, so that tests can run
// them inside a handle: eagerly, and captured as a CUDA graph.
//
//   y = aten.convolution(x, w, stride 1, padding 1)      (2-D, no bias)
//   o = aten._scaled_dot_product_flash_attention(q, k, v).output
//
// Sizes come from the inputs; the shims lay the outputs out as torch's meta
// functions do and run on the handle's stream (the thread's current one).
#include <array>
#include <cstdint>
#include <string>

#include "../container.h"

// aotirt's thread-local error message (aotirt.h), resolved from the process
// like the shims: a failing shim's reason goes into this model's own error,
// which aotirt reports first.
extern "C" const char* aotirt_last_error_message(void);

namespace model {
namespace {

void check(AOTITorchError err, const char* call) {
  if (err != AOTI_TORCH_SUCCESS) fail(std::string(call) + " failed: " + aotirt_last_error_message());
}

}  // namespace

const Spec& spec() {
  static const Spec s{{"x", "w", "q", "k", "v"}, {"y", "o"}, true};
  return s;
}

void run(const Device&, std::vector<Tensor>& inputs, std::vector<Tensor>& outputs, void*) {
  const std::array<int64_t, 2> one{1, 1}, zero{0, 0};
  AtenTensorHandle y = nullptr;
  check(aoti_torch_cuda_convolution(inputs[0].get(), inputs[1].get(), nullptr, one.data(), 2, one.data(), 2,
                                         one.data(), 2, 0, zero.data(), 2, 1, &y),
             "aoti_torch_cuda_convolution");
  outputs[0] = Tensor(y);
  AtenTensorHandle o = nullptr, lse = nullptr;
  int64_t max_q = 0, max_k = 0;
  check(aoti_torch_cuda__scaled_dot_product_flash_attention(
                 inputs[2].get(), inputs[3].get(), inputs[4].get(), 0.0, 0, 0, nullptr, &o, &lse, nullptr, nullptr,
                 &max_q, &max_k, nullptr, nullptr, nullptr),
             "aoti_torch_cuda__scaled_dot_product_flash_attention");
  Tensor unused(lse);
  outputs[1] = Tensor(o);
}

}  // namespace model
