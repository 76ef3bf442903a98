// sort_ops: a test-only model that calls the sorting fallback shims as an
// AOTInductor library built without libtorch does, so that tests can run
// them inside a handle: eagerly, and captured as a CUDA graph.
//
//   values, indices = aten.topk(x, 5, dim=-1)
//   sorted, order = aten.sort.stable(x, stable=True, dim=0, descending=True)
//
// Sizes come from the input; the shims lay the outputs out as torch's meta
// functions do and run on the handle's stream (the thread's current one).
#include <cstdint>
#include <string>

#include "../container.h"

// aotirt's thread-local error message (aotirt.h), resolved from the process
// like the shims: a failing shim's reason goes into this model's own error.
extern "C" const char* aotirt_last_error_message(void);

namespace model {
namespace {

void check(AOTITorchError err, const char* call) {
  if (err != AOTI_TORCH_SUCCESS) fail(std::string(call) + " failed: " + aotirt_last_error_message());
}

}  // namespace

const Spec& spec() {
  static const Spec s{{"x"}, {"values", "indices", "sorted", "order"}, true};
  return s;
}

void run(const Device&, std::vector<Tensor>& inputs, std::vector<Tensor>& outputs, void*) {
  AtenTensorHandle values = nullptr, indices = nullptr, sorted = nullptr, order = nullptr;
  check(aoti_torch_cuda_topk(inputs[0].get(), 5, -1, 1, 1, &values, &indices), "aoti_torch_cuda_topk");
  outputs[0] = Tensor(values);
  outputs[1] = Tensor(indices);
  int32_t stable = 1;
  check(aoti_torch_cuda_sort_stable(inputs[0].get(), &stable, 0, 1, &sorted, &order), "aoti_torch_cuda_sort_stable");
  outputs[2] = Tensor(sorted);
  outputs[3] = Tensor(order);
}

}  // namespace model
