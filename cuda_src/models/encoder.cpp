// encoder: frames [T, F] float32 -> hidden [T, D] float32.
//
//   hidden = layer_norm(gelu(conv1d(frames) + conv_b) @ lin_w + lin_b) * gamma + beta
//
// conv1d has kernel 3, padding 1, F -> D channels; lin_w is [D_in, D_out].
#include "../kernels/kernels.h"
#include "container.h"
#include "pipeline.h"

namespace k = kernels::active;

using namespace pipeline;

namespace {

// The weights, in file order (make_weights.py writes them so).
enum Weight : size_t { kConvW, kConvB, kLinW, kLinB, kGamma, kBeta };

}  // namespace

// The weights' shapes, in the same order: the container's constants
// (constant_buffers.h), which a blob holds in this order.
const std::vector<model::ConstantSpec>& model::constant_specs() {
  static const std::vector<ConstantSpec> l = {
      {"conv_w", {kD, kF, 3}}, {"conv_b", {kD}}, {"lin_w", {kD, kD}},
      {"lin_b", {kD}},         {"gamma", {kD}},  {"beta", {kD}},
  };
  return l;
}

namespace model {

const Spec& spec() {
  static const Spec s{{"frames"}, {"hidden"}, kBuiltForCuda};
  return s;
}

void run(const Device& device, const ConstantValues& w, std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
         void* stream) {
  check_input(inputs[0], 0, "encoder", aoti_torch_dtype_float32(), {kT, kF});
  const float* frames = static_cast<const float*>(inputs[0].data());

  const int32_t f32 = aoti_torch_dtype_float32();
  // conv and linear, both [T, D], share one scratch tensor: one allocation
  // instead of two. T * D is a multiple of 16 floats, so linear starts
  // 64-byte aligned, as in a tensor of its own.
  static_assert(kT * kD % 16 == 0, "linear must stay 64-byte aligned");
  Tensor scratch = empty_like_shape({2, kT, kD}, f32, device);
  Tensor hidden = empty_like_shape({kT, kD}, f32, device);
  float* c = static_cast<float*>(scratch.data());
  float* l = c + kT * kD;
  float* h = static_cast<float*>(hidden.data());

  check_kernel(k::conv1d_k3(frames, w[kConvW], w[kConvB], c, kT, kF, kD, stream), "conv1d_k3");
  check_kernel(k::gelu(c, c, kT * kD, stream), "gelu");
  check_kernel(k::matmul(c, w[kLinW], w[kLinB], l, kT, kD, kD, stream), "matmul");
  check_kernel(k::layer_norm(l, w[kGamma], w[kBeta], h, kT, kD, kLayerNormEps, stream), "layer_norm");
  // scratch is freed here, stream-ordered after the kernels above.
  outputs[0] = std::move(hidden);
}

}  // namespace model
