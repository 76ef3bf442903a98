// The scaled-dot-product-attention fallbacks of AOTInductor libraries, with
// the signatures of torch's generated c_shim_cuda.h / c_shim_cpu.h (the same
// in torch 2.11 and 2.13; see include/aotirt/shim.h). Inference only:
// dropout_p must be 0 and debug masks are refused.
//
// Each output is laid out as torch's meta function for the op lays it out
// (torch/_meta_registrations.py): the model's generated code was compiled
// against those sizes and strides and indexes the outputs with them.
// torchgen makes these ops' return pointers nullable: the generated code
// passes NULL for an output the graph has no use for (the "None" outputs of
// the meta functions, such as cum_seq_q), so each is written only when given.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "aotirt/shim.h"
#include "runtime/dtypes.h"
#include "runtime/errors.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"
#include "shims/attention/sdpa.h"
#include "shims/attention/sdpa_cublas.h"
#include "shims/attention/sdpa_fmha.h"
#include "shims/attention/sdpa_cudnn.h"
#include "shims/empty_like.h"
#include "shims/shim_helpers.h"

namespace aotirt {
namespace {

using attention::Problem;

aotirt_status bad(const char* name, const std::string& what) {
  return fail(AOTIRT_ERROR_VALUE, std::string(name) + ": " + what);
}

std::string shape_of(const Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.ndim; ++d) s += (d ? ", " : "") + std::to_string(t.sizes[d]);
  return s + "]";
}

// The cuDNN op's output (alloc_with_matching_layout in torch's meta): like
// empty_like(query) when the shapes agree, else dense with query's order of
// dimensions (a stable sort by decreasing stride).
void matching_layout_strides(const Tensor& q, const int64_t* sizes, int64_t* out) {
  bool same = true;
  for (int d = 0; d < 4; ++d) same = same && q.sizes[d] == sizes[d];
  if (same) {
    empty_like_strides(q, out);
    return;
  }
  int64_t order[4] = {0, 1, 2, 3};
  std::stable_sort(order, order + 4, [&](int64_t a, int64_t b) { return q.strides[a] > q.strides[b]; });
  int64_t stride = 1;
  for (int i = 3; i >= 0; --i) {
    out[order[i]] = stride;
    stride *= sizes[order[i]];
  }
}

// Checks the arguments every SDPA op takes and describes them in `p`.
// `bias` may be NULL; it broadcasts to [batch, heads, q_len, kv_len].
aotirt_status describe(const char* name, const Tensor* q, const Tensor* k, const Tensor* v, const Tensor* bias,
                       double dropout_p, const double* scale, int32_t device_type, Problem* p) {
  if (!q || !k || !v) return null_argument(name);
  if (dropout_p != 0.0)
    return bad(name, "dropout_p must be 0: aotirt runs inference, and has no dropout (got " +
                         std::to_string(dropout_p) + ")");
  const char* roles[3] = {"query", "key", "value"};
  const Tensor* qkv[3] = {q, k, v};
  const bool cuda = device_type == AOTIRT_DEVICE_CUDA;
  for (int r = 0; r < 3; ++r) {
    const Tensor& t = *qkv[r];
    if (t.ndim != 4)
      return bad(name, std::string(roles[r]) + " must have 4 dimensions [batch, heads, length, head size], got " +
                           shape_of(t));
    if (t.storage->device_type != device_type)
      return bad(name, std::string(roles[r]) + " must be a " + (cuda ? "CUDA" : "CPU") + " tensor");
    if (cuda && t.storage->device_index != q->storage->device_index)
      return bad(name, "query, key and value must be on one device");
    if (t.dtype != q->dtype)
      return fail(AOTIRT_ERROR_TYPE, std::string(name) + ": query, key and value must have one dtype (got " +
                                         dtype_name(q->dtype) + " and " + dtype_name(t.dtype) + ")");
  }
  const bool supported = q->dtype == AOTIRT_DTYPE_FLOAT32 || q->dtype == AOTIRT_DTYPE_FLOAT16 ||
                         q->dtype == AOTIRT_DTYPE_BFLOAT16 || (!cuda && q->dtype == AOTIRT_DTYPE_FLOAT64);
  if (!supported)
    return fail(AOTIRT_ERROR_TYPE, std::string(name) + ": " + dtype_name(q->dtype) +
                                       " inputs are not supported (float32, float16, bfloat16" +
                                       (cuda ? "" : ", float64") + ")");
  const int64_t batch = q->sizes[0], heads = q->sizes[1], q_len = q->sizes[2], head_dim = q->sizes[3];
  if (k->sizes[0] != batch || v->sizes[0] != batch)
    return bad(name, "query, key and value must have one batch size, got " + shape_of(*q) + ", " + shape_of(*k) +
                         ", " + shape_of(*v));
  if (k->sizes[1] != v->sizes[1] || k->sizes[2] != v->sizes[2])
    return bad(name, "key " + shape_of(*k) + " and value " + shape_of(*v) + " must have the same heads and length");
  if (k->sizes[3] != head_dim)
    return bad(name, "query " + shape_of(*q) + " and key " + shape_of(*k) + " must have the same head size");
  const int64_t kv_heads = k->sizes[1];
  if (kv_heads == 0 ? heads != 0 : heads % kv_heads != 0)
    return bad(name, "query's heads (" + std::to_string(heads) + ") must be a multiple of key's and value's (" +
                         std::to_string(kv_heads) + "): grouped-query attention shares each key/value head "
                                                    "among that many query heads");

  p->batch = batch;
  p->heads = heads;
  p->kv_heads = kv_heads;
  p->q_len = q_len;
  p->kv_len = k->sizes[2];
  p->head_dim = head_dim;
  p->value_dim = v->sizes[3];
  p->q = q->data();
  p->k = k->data();
  p->v = v->data();
  p->dtype = q->dtype;
  for (int d = 0; d < 4; ++d) {
    p->q_stride[d] = q->strides[d];
    p->k_stride[d] = k->strides[d];
    p->v_stride[d] = v->strides[d];
  }
  // torch's default: 1/sqrt(head size of the query).
  p->scale = scale ? *scale : (head_dim > 0 ? 1.0 / std::sqrt(static_cast<double>(head_dim)) : 1.0);

  if (bias) {
    if (bias->ndim > 4)
      return bad(name, "the attention bias must have at most 4 dimensions, got " + shape_of(*bias));
    if (bias->storage->device_type != device_type ||
        (cuda && bias->storage->device_index != q->storage->device_index))
      return bad(name, "the attention bias must be on the device of the query");
    if (!is_floating(bias->dtype) && bias->dtype != AOTIRT_DTYPE_BOOL)
      return fail(AOTIRT_ERROR_TYPE, std::string(name) + ": the attention bias must be floating point (added to "
                                                         "the scores) or bool (true: attend), not " +
                                         dtype_name(bias->dtype));
    // Broadcast from the right, as torch does: a size-1 dimension repeats.
    const int64_t target[4] = {batch, heads, q_len, p->kv_len};
    for (int d = 0; d < 4; ++d) {
      const int64_t bd = d - (4 - bias->ndim);
      if (bd < 0) {
        p->bias_stride[d] = 0;
        continue;
      }
      if (bias->sizes[bd] != target[d] && bias->sizes[bd] != 1)
        return bad(name, "the attention bias " + shape_of(*bias) + " does not broadcast to [batch, heads, "
                                                                   "q_len, kv_len] = [" +
                             std::to_string(batch) + ", " + std::to_string(heads) + ", " + std::to_string(q_len) +
                             ", " + std::to_string(p->kv_len) + "]");
      p->bias_stride[d] = bias->sizes[bd] == 1 ? 0 : bias->strides[bd];
    }
    p->bias = bias->data();
    p->bias_dtype = bias->dtype;
  }
  return AOTIRT_OK;
}

aotirt_status make(int64_t ndim, const int64_t* sizes, const int64_t* strides, int32_t dtype, const Tensor& like,
                   OwnedTensor* out) {
  Tensor* t = nullptr;
  AOTIRT_TRY(new_tensor(ndim, sizes, strides, dtype, like.storage->device_type, like.storage->device_index, &t));
  out->reset(t);
  return AOTIRT_OK;
}

// A zero-filled int64 CPU tensor for the dropout generator's seed and
// offset: without dropout torch returns them unread (its meta functions
// give them no device; eager keeps them on the CPU or beside the output).
aotirt_status rng_placeholder(int64_t ndim, const int64_t* sizes, OwnedTensor* out) {
  Tensor* t = nullptr;
  AOTIRT_TRY(new_tensor(ndim, sizes, nullptr, AOTIRT_DTYPE_INT64, AOTIRT_DEVICE_CPU, 0, &t));
  out->reset(t);
  std::memset(t->data(), 0, static_cast<size_t>(t->numel()) * sizeof(int64_t));
  return AOTIRT_OK;
}

// An empty 1-D tensor beside the query, for outputs torch leaves undefined
// (cum_seq_q/k) or empty (the debug mask without return_debug_mask).
aotirt_status empty_placeholder(int32_t dtype, const Tensor& like, OwnedTensor* out) {
  const int64_t zero = 0;
  return make(1, &zero, nullptr, dtype, like, out);
}

// Writes `out` and `lse` into `p`, orders the work after the producers of
// the inputs and runs it: on the CPU now, on CUDA queued on the current
// stream (the one the outputs were allocated on), without waiting.
aotirt_status compute(Problem& p, const Tensor* const* inputs, int n_inputs, const Tensor& out, const Tensor* lse) {
  p.out = out.data();
  for (int d = 0; d < 4; ++d) p.out_stride[d] = out.strides[d];
  if (lse) {
    p.lse = lse->data();
    p.lse_dtype = lse->dtype;
    for (int d = 0; d < 3; ++d) p.lse_stride[d] = lse->strides[d];
  }
  if (out.storage->device_type == AOTIRT_DEVICE_CPU) return attention::run_cpu(p);
  StreamRef stream;
  AOTIRT_TRY(stream_for_device(out.storage->device_index, &stream));
  for (int i = 0; i < n_inputs; ++i)
    if (inputs[i]) AOTIRT_TRY(use_on(*inputs[i], stream.get()));
  // The CUDA paths, each taking what it can (pure checks, no hot-path
  // logging): float16/bfloat16 on cuDNN's fused attention (sdpa_cudnn.h),
  // float32 on CUTLASS's fused kernel (sdpa_fmha.h), else on cuBLAS GEMMs
  // around a softmax kernel (sdpa_cublas.h), then the straightforward kernel
  // (sdpa_kernel.cu) for everything else.
  if (attention::cudnn_takes(p)) return attention::run_cudnn(p, stream.get());
  if (attention::fmha_takes(p, out.storage->device_index)) {
    attention::log_path(p, "CUTLASS's fused attention kernel (sdpa_fmha.cu)");
    return attention::run_fmha(p, stream.get());
  }
  if (attention::cublas_takes(p)) return attention::run_cublas(p, stream.get());
  attention::log_path(p, "the straightforward kernel (sdpa_kernel.cu)");
  return attention::run_cuda(p, stream.get());
}

void hand_out(OwnedTensor& t, AtenTensorHandle* ret) {
  if (ret) *ret = t.release();
}

void hand_out(int64_t value, int64_t* ret) {
  if (ret) *ret = value;
}

// The nine returns of the flash and efficient attention shims, in torch's
// order: output, logsumexp, the two cumulative sequence lengths (None unless
// asked for), the two maximum lengths, the generator state (two tensors) and
// the debug mask.
struct NineReturns {
  OwnedTensor out, lse, cum_q, cum_k, rng0, rng1, debug;
  void hand_out_all(const Problem& p, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
                    AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5, AtenTensorHandle* ret6,
                    AtenTensorHandle* ret7, AtenTensorHandle* ret8) {
    hand_out(out, ret0);
    hand_out(lse, ret1);
    hand_out(cum_q, ret2);
    hand_out(cum_k, ret3);
    hand_out(p.q_len, ret4);
    hand_out(p.kv_len, ret5);
    hand_out(rng0, ret6);
    hand_out(rng1, ret7);
    hand_out(debug, ret8);
  }
};

Tensor* optional_tensor(AtenTensorHandle* handle) { return handle ? *handle : nullptr; }

aotirt_status refuse_debug_mask(const char* name, int32_t return_debug_mask) {
  if (!return_debug_mask) return AOTIRT_OK;
  return bad(name, "return_debug_mask must be false: the debug mask records dropout, which inference does not use");
}

}  // namespace
}  // namespace aotirt

using aotirt::OwnedTensor;
using aotirt::Tensor;
using aotirt::attention::Problem;

extern "C" {

AOTITorchError aoti_torch_cuda__scaled_dot_product_efficient_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, double* scale, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3) {
  const char* name = "aoti_torch_cuda__scaled_dot_product_efficient_attention";
  return aotirt::shim(name, [&] {
    Tensor* bias = aotirt::optional_tensor(attn_bias);
    Problem p;
    AOTIRT_TRY(aotirt::describe(name, query, key, value, bias, dropout_p, scale, AOTIRT_DEVICE_CUDA, &p));
    p.causal = is_causal ? aotirt::attention::kTopLeft : aotirt::attention::kNotCausal;
    aotirt::DeviceGuard device;
    AOTIRT_TRY(device.enter(query->storage->device_index));
    // out: torch.empty(B, L, H, Ev).transpose(1, 2).
    const int64_t blhe[4] = {p.batch, p.q_len, p.heads, p.value_dim};
    int64_t contiguous[4];
    aotirt::contiguous_strides(4, blhe, contiguous);
    const int64_t sizes[4] = {p.batch, p.heads, p.q_len, p.value_dim};
    const int64_t strides[4] = {contiguous[0], contiguous[2], contiguous[1], contiguous[3]};
    OwnedTensor out, lse, seed, offset;
    AOTIRT_TRY(aotirt::make(4, sizes, strides, query->dtype, *query, &out));
    // logsumexp: float32 [B, H, L rounded up to 32] (the padding holds +inf),
    // or [B, H, 0] when not asked for.
    const int64_t lse_len = compute_log_sumexp ? (p.q_len + 31) / 32 * 32 : 0;
    const int64_t lse_sizes[3] = {p.batch, p.heads, lse_len};
    AOTIRT_TRY(aotirt::make(3, lse_sizes, nullptr, AOTIRT_DTYPE_FLOAT32, *query, &lse));
    p.lse_padding = lse_len - p.q_len;
    // Placeholders are made only for the outputs asked for (hand_out drops
    // the rest): no host allocations for nothing on every call.
    if (ret2) AOTIRT_TRY(aotirt::rng_placeholder(0, nullptr, &seed));
    if (ret3) AOTIRT_TRY(aotirt::rng_placeholder(0, nullptr, &offset));
    const Tensor* inputs[4] = {query, key, value, bias};
    AOTIRT_TRY(aotirt::compute(p, inputs, 4, *out, compute_log_sumexp ? lse.get() : nullptr));
    aotirt::hand_out(out, ret0);
    aotirt::hand_out(lse, ret1);
    aotirt::hand_out(seed, ret2);
    aotirt::hand_out(offset, ret3);
    return AOTIRT_OK;
  });
}

AOTITorchError aoti_torch_cuda__scaled_dot_product_cudnn_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, int32_t return_debug_mask, double* scale,
    AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3, int64_t* ret4,
    int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7, AtenTensorHandle* ret8) {
  const char* name = "aoti_torch_cuda__scaled_dot_product_cudnn_attention";
  return aotirt::shim(name, [&] {
    Tensor* bias = aotirt::optional_tensor(attn_bias);
    Problem p;
    AOTIRT_TRY(aotirt::describe(name, query, key, value, bias, dropout_p, scale, AOTIRT_DEVICE_CUDA, &p));
    AOTIRT_TRY(aotirt::refuse_debug_mask(name, return_debug_mask));
    p.causal = is_causal ? aotirt::attention::kTopLeft : aotirt::attention::kNotCausal;
    aotirt::DeviceGuard device;
    AOTIRT_TRY(device.enter(query->storage->device_index));
    const int64_t sizes[4] = {p.batch, p.heads, p.q_len, p.value_dim};
    int64_t strides[4];
    aotirt::matching_layout_strides(*query, sizes, strides);
    aotirt::NineReturns r;
    AOTIRT_TRY(aotirt::make(4, sizes, strides, query->dtype, *query, &r.out));
    const int64_t lse_sizes[4] = {p.batch, p.heads, p.q_len, 1};  // float32 [B, H, L, 1]
    AOTIRT_TRY(aotirt::make(4, lse_sizes, nullptr, AOTIRT_DTYPE_FLOAT32, *query, &r.lse));
    // torch's meta returns None for these three: they come only if asked for.
    if (ret2) AOTIRT_TRY(aotirt::empty_placeholder(AOTIRT_DTYPE_INT32, *query, &r.cum_q));
    if (ret3) AOTIRT_TRY(aotirt::empty_placeholder(AOTIRT_DTYPE_INT32, *query, &r.cum_k));
    if (ret8) AOTIRT_TRY(aotirt::empty_placeholder(query->dtype, *query, &r.debug));
    // The generator's seed and offset, 0-dim.
    if (ret6) AOTIRT_TRY(aotirt::rng_placeholder(0, nullptr, &r.rng0));
    if (ret7) AOTIRT_TRY(aotirt::rng_placeholder(0, nullptr, &r.rng1));
    const Tensor* inputs[4] = {query, key, value, bias};
    // The logsumexp tensor exists either way (torch's meta makes it); it is
    // computed only when asked for and wanted.
    AOTIRT_TRY(aotirt::compute(p, inputs, 4, *r.out, compute_log_sumexp && ret1 ? r.lse.get() : nullptr));
    r.hand_out_all(p, ret0, ret1, ret2, ret3, ret4, ret5, ret6, ret7, ret8);
    return AOTIRT_OK;
  });
}

AOTITorchError aoti_torch_cuda__scaled_dot_product_flash_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p, int32_t is_causal,
    int32_t return_debug_mask, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7,
    AtenTensorHandle* ret8) {
  const char* name = "aoti_torch_cuda__scaled_dot_product_flash_attention";
  return aotirt::shim(name, [&] {
    Problem p;
    AOTIRT_TRY(aotirt::describe(name, query, key, value, nullptr, dropout_p, scale, AOTIRT_DEVICE_CUDA, &p));
    AOTIRT_TRY(aotirt::refuse_debug_mask(name, return_debug_mask));
    if (p.value_dim != p.head_dim)
      return aotirt::bad(name, "query " + aotirt::shape_of(*query) + " and value " + aotirt::shape_of(*value) +
                                   " must have the same head size");
    // The flash kernel aligns its causal mask to the bottom right (torch
    // dispatches to it only when that agrees with the top left: L == S).
    p.causal = !is_causal ? aotirt::attention::kNotCausal
               : p.q_len == p.kv_len ? aotirt::attention::kTopLeft
                                     : aotirt::attention::kBottomRight;
    aotirt::DeviceGuard device;
    AOTIRT_TRY(device.enter(query->storage->device_index));
    int64_t strides[4];
    aotirt::empty_like_strides(*query, strides);  // out = torch.empty_like(query)
    aotirt::NineReturns r;
    AOTIRT_TRY(aotirt::make(4, query->sizes, strides, query->dtype, *query, &r.out));
    const int64_t lse_sizes[3] = {p.batch, p.heads, p.q_len};  // float32 [B, H, L]
    AOTIRT_TRY(aotirt::make(3, lse_sizes, nullptr, AOTIRT_DTYPE_FLOAT32, *query, &r.lse));
    if (ret2) AOTIRT_TRY(aotirt::empty_placeholder(AOTIRT_DTYPE_INT32, *query, &r.cum_q));
    if (ret3) AOTIRT_TRY(aotirt::empty_placeholder(AOTIRT_DTYPE_INT32, *query, &r.cum_k));
    // The generator state: uint64 [2] and [] in torch, which has no aotirt
    // dtype; int64 has the same bytes, and nobody reads them without dropout.
    const int64_t two = 2;
    if (ret6) AOTIRT_TRY(aotirt::rng_placeholder(1, &two, &r.rng0));
    if (ret7) AOTIRT_TRY(aotirt::rng_placeholder(0, nullptr, &r.rng1));
    // torch.empty(0, dtype=query.dtype)
    if (ret8) AOTIRT_TRY(aotirt::empty_placeholder(query->dtype, *query, &r.debug));
    const Tensor* inputs[3] = {query, key, value};
    AOTIRT_TRY(aotirt::compute(p, inputs, 3, *r.out, ret1 ? r.lse.get() : nullptr));  // computed when wanted
    r.hand_out_all(p, ret0, ret1, ret2, ret3, ret4, ret5, ret6, ret7, ret8);
    return AOTIRT_OK;
  });
}

AOTITorchError aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p, int32_t is_causal,
    AtenTensorHandle* attn_mask, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  const char* name = "aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu";
  return aotirt::shim(name, [&] {
    Tensor* mask = aotirt::optional_tensor(attn_mask);
    Problem p;
    AOTIRT_TRY(aotirt::describe(name, query, key, value, mask, dropout_p, scale, AOTIRT_DEVICE_CPU, &p));
    if (p.value_dim != p.head_dim)
      return aotirt::bad(name, "query " + aotirt::shape_of(*query) + " and value " + aotirt::shape_of(*value) +
                                   " must have the same head size");
    p.causal = is_causal ? aotirt::attention::kTopLeft : aotirt::attention::kNotCausal;
    int64_t strides[4];
    aotirt::empty_like_strides(*query, strides);  // out = torch.empty_like(query)
    OwnedTensor out, lse;
    AOTIRT_TRY(aotirt::make(4, query->sizes, strides, query->dtype, *query, &out));
    // logsumexp: torch.empty(B, L, H).transpose(1, 2), in the computation
    // dtype (float64 for float64 inputs, else float32).
    const int64_t blh[3] = {p.batch, p.q_len, p.heads};
    int64_t contiguous[3];
    aotirt::contiguous_strides(3, blh, contiguous);
    const int64_t lse_sizes[3] = {p.batch, p.heads, p.q_len};
    const int64_t lse_strides[3] = {contiguous[0], contiguous[2], contiguous[1]};
    const int32_t lse_dtype = query->dtype == AOTIRT_DTYPE_FLOAT64 ? AOTIRT_DTYPE_FLOAT64 : AOTIRT_DTYPE_FLOAT32;
    AOTIRT_TRY(aotirt::make(3, lse_sizes, lse_strides, lse_dtype, *query, &lse));
    const Tensor* inputs[4] = {query, key, value, mask};
    AOTIRT_TRY(aotirt::compute(p, inputs, 4, *out, lse.get()));
    aotirt::hand_out(out, ret0);
    aotirt::hand_out(lse, ret1);
    return AOTIRT_OK;
  });
}

}  // extern "C"
