// add_mul's container side: checks its inputs as generated code does, asks the
// runtime for its output, and computes on the CPU or launches the CUDA kernel.
#include "add_mul.h"

#include <string>

#include "container.h"

#if defined(AOTIRT_MODEL_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace model {

const Spec& spec() {
  static const Spec s{{"a", "b", "c"}, {"out"}, kBuiltForCuda};
  return s;
}

void run(const Device& device, std::vector<Tensor>& inputs, std::vector<Tensor>& outputs, void* stream) {
  const std::vector<int64_t> shape = inputs[0].sizes();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string which = "input " + std::to_string(i) + " (" + spec().input_names[i] + ")";
    if (inputs[i].dtype() != aoti_torch_dtype_float32()) fail(which + ": add_mul takes float32 tensors");
    if (inputs[i].sizes() != shape)
      fail(which + " has shape " + shape_string(inputs[i].sizes()) + ", input 0 (a) has " + shape_string(shape) +
           ": add_mul takes inputs of one shape");
    if (!inputs[i].is_contiguous()) fail(which + " is not contiguous");
  }
  Tensor out = empty_like_shape(shape, aoti_torch_dtype_float32(), device);
  const float* a = static_cast<const float*>(inputs[0].data());
  const float* b = static_cast<const float*>(inputs[1].data());
  const float* c = static_cast<const float*>(inputs[2].data());
  float* o = static_cast<float*>(out.data());
  const int64_t n = out.numel();
#if defined(AOTIRT_MODEL_CUDA)
  int err = add_mul_cuda(a, b, c, o, n, stream);
  if (err != 0) fail(std::string("add_mul kernel launch failed: ") + cudaGetErrorName(static_cast<cudaError_t>(err)));
#else
  (void)stream;
  for (int64_t i = 0; i < n; ++i) o[i] = a[i] * b[i] + c[i];
#endif
  outputs[0] = std::move(out);
}

}  // namespace model
