// random_ops: a test-only model that calls the random shims as an
// AOTInductor library built without libtorch does, on its own device (built
// for the CPU and for CUDA), so that tests can run them inside a handle,
// whose generator they draw from: eagerly, and captured as a CUDA graph.
//
//   u = aten.rand(x.shape)                  float32, uniform in [0, 1)
//   n = aten.randn(x.shape)                 float32, standard normal
//   i = aten.randint.low(-5, 7, x.shape)    int64
//   seeds = aten.randint.low_out(0, 2**63 - 1, [8], out=empty([8]))
//           (what Inductor's inductor_seeds draws for its random kernels)
//
// x's values are not read.
#include <cstdint>
#include <string>
#include <vector>

#include "../container.h"

// aotirt's thread-local error message (aotirt.h), resolved from the process
// like the shims: a failing shim's reason goes into this model's own error.
extern "C" const char* aotirt_last_error_message(void);

namespace model {
namespace {

void check(AOTITorchError err, const char* call) {
  if (err != AOTI_TORCH_SUCCESS) fail(std::string(call) + " failed: " + aotirt_last_error_message());
}

#if defined(AOTIRT_MODEL_CUDA)
#define RANDOM_SHIM(op) aoti_torch_cuda_##op
#else
#define RANDOM_SHIM(op) aoti_torch_cpu_##op
#endif

}  // namespace

const Spec& spec() {
  static const Spec s{{"x"}, {"u", "n", "i", "seeds"}, kBuiltForCuda};
  return s;
}

void run(const Device& device, std::vector<Tensor>& inputs, std::vector<Tensor>& outputs, void*) {
  const std::vector<int64_t> shape = inputs[0].sizes();
  const int64_t ndim = static_cast<int64_t>(shape.size());
  int32_t float32 = aoti_torch_dtype_float32(), int64 = aoti_torch_dtype_int64();
  int32_t device_type = device.type;
  AtenTensorHandle u = nullptr, n = nullptr, i = nullptr;
  check(RANDOM_SHIM(rand)(shape.data(), ndim, &float32, nullptr, &device_type, device.index, nullptr, &u), "rand");
  outputs[0] = Tensor(u);
  check(RANDOM_SHIM(randn)(shape.data(), ndim, &float32, nullptr, &device_type, device.index, nullptr, &n), "randn");
  outputs[1] = Tensor(n);
  check(RANDOM_SHIM(randint_low)(-5, 7, shape.data(), ndim, &int64, nullptr, &device_type, device.index, nullptr, &i),
        "randint_low");
  outputs[2] = Tensor(i);
  const std::vector<int64_t> count{8};
  Tensor seeds = empty_like_shape(count, int64, device);
  check(RANDOM_SHIM(randint_low_out)(seeds.get(), 0, INT64_MAX, count.data(), 1), "randint_low_out");
  outputs[3] = std::move(seeds);
}

}  // namespace model
