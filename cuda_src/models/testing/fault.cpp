// fault: a test-only model whose kernel writes to an invalid address, so that
// tests can check how a kernel fault surfaces (at the next copy, as a
// CudaError) and that the runtime then refuses work instead of hanging.
#include <cuda_runtime_api.h>

#include <string>

#include "../container.h"

int fault_launch(float* out, int64_t n, void* stream);

namespace model {

const Spec& spec() {
  static const Spec s{{"x"}, {"y"}, true};
  return s;
}

void run(const Device& device, std::vector<Tensor>& inputs, std::vector<Tensor>& outputs, void* stream) {
  Tensor y = empty_like_shape(inputs[0].sizes(), aoti_torch_dtype_float32(), device);
  int err = fault_launch(static_cast<float*>(y.data()), y.numel(), stream);
  if (err != 0) fail(std::string("fault kernel launch failed: ") + cudaGetErrorName(static_cast<cudaError_t>(err)));
  outputs[0] = std::move(y);
}

}  // namespace model
