// sdpa: a test-only model that runs causal float32 attention through
// aoti_torch_cuda__scaled_dot_product_efficient_attention the way generated
// code does, so that tests can capture the shim in a CUDA graph.
//
// Inputs are batch-first projections, contiguous: query [B, L, H, E], key
// [B, S, Hk, E], value [B, S, Hk, Ev]. Like Inductor, the model hands the
// shim their [B, H, L, E] views (a permute: no copy). Outputs: the shim's
// out [B, H, L, Ev] (strides of [B, L, H, Ev]) and its log-sum-exp
// [B, H, ceil(L / 32) * 32].
#include <string>

#include "../container.h"

namespace model {
namespace {

// x [B, L, H, D] (contiguous) viewed as [B, H, L, D].
Tensor heads_first(const Tensor& x) {
  const std::vector<int64_t> s = x.sizes();
  const int64_t sizes[4] = {s[0], s[2], s[1], s[3]};
  const int64_t strides[4] = {s[1] * s[2] * s[3], s[3], s[2] * s[3], 1};
  AtenTensorHandle view = nullptr;
  check_shim(aoti_torch__reinterpret_tensor(x.get(), 4, sizes, strides, 0, &view), "aoti_torch__reinterpret_tensor");
  return Tensor(view);
}

}  // namespace

const Spec& spec() {
  static const Spec s{{"query", "key", "value"}, {"out", "logsumexp"}, true};
  return s;
}

void run(const Device& device, std::vector<Tensor>& inputs, std::vector<Tensor>& outputs, void* stream) {
  (void)device;
  (void)stream;  // the shim runs on the current stream, which the runtime set to this one
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string which = "input " + std::to_string(i) + " (" + spec().input_names[i] + ")";
    if (inputs[i].dtype() != aoti_torch_dtype_float32() || inputs[i].sizes().size() != 4 ||
        !inputs[i].is_contiguous())
      fail(which + ": sdpa takes contiguous float32 tensors of 4 dimensions");
  }
  Tensor q = heads_first(inputs[0]), k = heads_first(inputs[1]), v = heads_first(inputs[2]);
  AtenTensorHandle out = nullptr, lse = nullptr;
  check_shim(aoti_torch_cuda__scaled_dot_product_efficient_attention(q.get(), k.get(), v.get(), nullptr, 1, 0.0, 1,
                                                                       nullptr, &out, &lse, nullptr, nullptr),
             "aoti_torch_cuda__scaled_dot_product_efficient_attention");
  outputs[0] = Tensor(out);
  outputs[1] = Tensor(lse);
}

}  // namespace model
