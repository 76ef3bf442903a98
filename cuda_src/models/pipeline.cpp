#include "pipeline.h"

#include <algorithm>
#include <string>

#if defined(AOTIRT_MODEL_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace pipeline {

void check_input(const model::Tensor& t, size_t index, const char* model_name, int32_t dtype,
                 std::initializer_list<int64_t> shape) {
  auto which = [&] { return "input " + std::to_string(index) + " (" + model::spec().input_names[index] + ")"; };
  if (t.dtype() != dtype)
    model::fail(which() + ": " + model_name + " takes " + model::dtype_name(dtype) + ", got " +
                model::dtype_name(t.dtype()));
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
