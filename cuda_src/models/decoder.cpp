// decoder: one greedy step. hidden [T, D] float32, token int64 [1] ->
// logits [V] float32, next_token int64 [1].
//
//   x = embedding[token]
//   ctx = attention(x @ wq, hidden @ wk, hidden @ wv)     (one query, scaled by 1/sqrt(D))
//   h = x + ctx
//   logits = gelu(h @ w1 + b1) @ w2 + b2
//   next_token = argmax(logits)                           (first index on ties)
//
// The token is read where it lives: on a GPU, next_token stays on the device
// and is the next step's token input as it is, with no trip to the host.
#include <string>

#include "../kernels/kernels.h"
#include "container.h"
#include "pipeline.h"

namespace k = kernels::active;

using namespace pipeline;

namespace {

// The weights, in file order (make_weights.py writes them so).
enum Weight : size_t { kEmbedding, kWq, kWk, kWv, kW1, kB1, kW2, kB2 };

// A step's six intermediates share one scratch tensor: one allocation per
// step (one graph node when captured) instead of six. These are where each
// starts in it, in floats. Every size is a multiple of 16 floats, so every
// region starts 64-byte aligned: any vector loads a compiler emits for the
// kernels stay aligned, as in tensors of their own.
constexpr int64_t kAtX = 0;                       // x [D]: the token's embedding
constexpr int64_t kAtQ = kAtX + kD;               // q [D]
constexpr int64_t kAtKeys = kAtQ + kD;            // keys [T, D]
constexpr int64_t kAtValues = kAtKeys + kT * kD;  // values [T, D]
constexpr int64_t kAtH = kAtValues + kT * kD;     // h [D] = x + ctx
constexpr int64_t kAtM = kAtH + kD;               // m [H] = gelu(h @ w1 + b1)
constexpr int64_t kScratch = kAtM + kH;
static_assert(kD % 16 == 0 && kT * kD % 16 == 0 && kH % 16 == 0, "scratch regions must stay 64-byte aligned");

}  // namespace

// The weights' shapes, in the same order: the container's constants
// (constant_buffers.h), which a blob holds in this order.
const std::vector<model::ConstantSpec>& model::constant_specs() {
  static const std::vector<ConstantSpec> l = {
      {"embedding", {kV, kD}}, {"wq", {kD, kD}}, {"wk", {kD, kD}}, {"wv", {kD, kD}},
      {"w1", {kD, kH}},        {"b1", {kH}},     {"w2", {kH, kV}}, {"b2", {kV}},
  };
  return l;
}

namespace model {

const Spec& spec() {
  static const Spec s{{"hidden", "token"}, {"logits", "next_token"}, kBuiltForCuda};
  return s;
}

void run(const Device& device, const ConstantValues& w, std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
         void* stream) {
  check_input(inputs[0], 0, "decoder", aoti_torch_dtype_float32(), {kT, kD});
  check_input(inputs[1], 1, "decoder", aoti_torch_dtype_int64(), {1});
  const float* hidden = static_cast<const float*>(inputs[0].data());
  const int64_t* token = static_cast<const int64_t*>(inputs[1].data());
#if !defined(AOTIRT_MODEL_CUDA)
  // On the CPU the token can be checked for free; on a GPU reading it would
  // be a host wait, so an out-of-range token there gives NaN logits instead.
  if (*token < 0 || *token >= kV)
    fail("input 1 (token) is " + std::to_string(*token) + ", outside the vocabulary [0, " + std::to_string(kV) +
         ")");
#endif

  const int32_t f32 = aoti_torch_dtype_float32();
  Tensor scratch = empty_like_shape({kScratch}, f32, device);
  Tensor logits = empty_like_shape({kV}, f32, device);
  Tensor next = empty_like_shape({1}, aoti_torch_dtype_int64(), device);
  float* const base = static_cast<float*>(scratch.data());
  float* x = base + kAtX;
  float* q = base + kAtQ;
  float* keys = base + kAtKeys;
  float* values = base + kAtValues;
  float* h = base + kAtH;
  float* m = base + kAtM;
  float* l = static_cast<float*>(logits.data());

  // Seven launches: keys and values share one, the residual add rides in
  // attention's last pass and GELU in w1's, as a compiler would fuse them (a
  // decoder step on a GPU is a chain of small kernels, each paying a launch).
  check_kernel(k::embedding(w[kEmbedding], token, x, kV, kD, stream), "embedding");
  check_kernel(k::matmul(x, w[kWq], nullptr, q, 1, kD, kD, stream), "matmul (q)");
  check_kernel(k::matmul_pair(hidden, w[kWk], w[kWv], keys, values, kT, kD, kD, stream),
               "matmul (keys and values)");
  check_kernel(k::attention(q, keys, values, x, h, kT, kD, stream), "attention");  // h = x + ctx
  check_kernel(k::matmul_gelu(h, w[kW1], w[kB1], m, 1, kH, kD, stream), "matmul + gelu (w1)");
  check_kernel(k::matmul(m, w[kW2], w[kB2], l, 1, kV, kH, stream), "matmul (w2)");
  check_kernel(k::argmax(l, kV, static_cast<int64_t*>(next.data()), stream), "argmax");
  // scratch is freed here, stream-ordered after the kernels above.
  outputs[0] = std::move(logits);
  outputs[1] = std::move(next);
}

}  // namespace model
