// cuDNN fused attention for the CUDA SDPA shims (sdpa_cudnn.h), built as
// torch's cudnn/MHA.cpp builds it: Q [B, H, L, E], K [B, Hk, S, E],
// V [B, Hk, S, Ev] with their own strides (grouped-query heads when
// Hk < H), O [B, H, L, Ev] with the output's strides, the scale a float
// passed by value, an optional bias [1|B, 1|H, 1|L, S], a causal mask, and
// Stats [B, H, L, 1] float32 (natural-log log-sum-exp) only when asked for.

#include "shims/attention/sdpa_cudnn.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/errors.h"
#include "runtime/tensor.h"
#include "shims/libs/cudnn.h"

#if defined(AOTIRT_HAVE_CUDNN)
#include "shims/libs/cudnn_graph.h"
#endif

namespace aotirt {
namespace attention {

#if !defined(AOTIRT_HAVE_CUDNN)

bool cudnn_takes(const Problem&) { return false; }

aotirt_status run_cudnn(const Problem& p, Stream* stream) { return run_cuda(p, stream); }

#else

namespace {

namespace fe = cudnn_frontend;

constexpr const char* kWho = "attention";

enum Uid : int64_t { kQ = 1, kK, kV, kO, kBias, kScale, kStats };

struct Shape {
  int64_t sizes[4];
  int64_t strides[4];
};

// Rows contiguous, the other strides (of dimensions that have more than one
// element) in whole 16-byte steps.
bool rows_aligned(const Shape& s) {
  if (s.strides[3] != 1 && s.sizes[3] > 1) return false;
  for (int d = 0; d < 3; ++d)
    if (s.sizes[d] > 1 && s.strides[d] % 8 != 0) return false;
  return true;
}

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

Shape q_shape(const Problem& p) {
  return {{p.batch, p.heads, p.q_len, p.head_dim}, {p.q_stride[0], p.q_stride[1], p.q_stride[2], p.q_stride[3]}};
}

Shape k_shape(const Problem& p) {
  return {{p.batch, p.kv_heads, p.kv_len, p.head_dim}, {p.k_stride[0], p.k_stride[1], p.k_stride[2], p.k_stride[3]}};
}

Shape v_shape(const Problem& p) {
  return {{p.batch, p.kv_heads, p.kv_len, p.value_dim}, {p.v_stride[0], p.v_stride[1], p.v_stride[2], p.v_stride[3]}};
}

Shape o_shape(const Problem& p) {
  return {{p.batch, p.heads, p.q_len, p.value_dim},
          {p.out_stride[0], p.out_stride[1], p.out_stride[2], p.out_stride[3]}};
}

// The bias as cuDNN takes it: a broadcast dimension (stride 0) has size 1.
Shape bias_shape(const Problem& p) {
  const int64_t full[4] = {p.batch, p.heads, p.q_len, p.kv_len};
  Shape s;
  for (int d = 0; d < 4; ++d) {
    s.sizes[d] = p.bias_stride[d] == 0 ? 1 : full[d];
    s.strides[d] = p.bias_stride[d];
  }
  return s;
}

// Strides as cuDNN gets them: a size-1 dimension with stride 0 (which
// addresses nothing) gets the packed stride of the dimensions inside it, as
// torch's fixSizeOneDimStrideSDPA does; cuDNN refuses zero strides.
std::vector<int64_t> cudnn_strides(const Shape& s) {
  std::vector<int64_t> out(s.strides, s.strides + 4);
  for (int d = 3; d >= 0; --d)
    if (s.sizes[d] == 1 && out[d] == 0) {
      int64_t inner = 1;
      for (int e = d + 1; e < 4; ++e) inner *= s.sizes[e];
      out[d] = inner;
    }
  return out;
}

std::vector<int64_t> dims(const Shape& s) { return std::vector<int64_t>(s.sizes, s.sizes + 4); }

void append(std::string* key, int64_t v) { key->append(reinterpret_cast<const char*>(&v), sizeof(v)); }

void append(std::string* key, const Shape& s) {
  for (int64_t v : dims(s)) append(key, v);
  for (int64_t v : cudnn_strides(s)) append(key, v);
}

// Everything the graph depends on; not the scale, which is passed by value.
std::string key_of(const Problem& p) {
  std::string key = "sdpa";
  append(&key, p.dtype);
  append(&key, p.causal);
  append(&key, p.lse != nullptr);
  append(&key, q_shape(p));
  append(&key, k_shape(p));
  append(&key, v_shape(p));
  append(&key, o_shape(p));
  append(&key, p.bias != nullptr);
  if (p.bias) append(&key, bias_shape(p));
  return key;
}

std::string describe(const Problem& p) {
  std::string text = std::string(dtype_name(p.dtype)) + " attention B=" + std::to_string(p.batch) +
                     " H=" + std::to_string(p.heads) + " Hk=" + std::to_string(p.kv_heads) +
                     " L=" + std::to_string(p.q_len) + " S=" + std::to_string(p.kv_len) +
                     " E=" + std::to_string(p.head_dim) + " Ev=" + std::to_string(p.value_dim);
  if (p.causal == kTopLeft) text += ", causal (top left)";
  if (p.causal == kBottomRight) text += ", causal (bottom right)";
  if (p.bias) text += ", bias";
  if (p.lse) text += ", log-sum-exp";
  return text;
}

// The graph of `p`: one sdpa node, float math; with `tuning`, its engines
// measured as a convolution's are (cudnn_tuning.h).
void build(const Problem& p, cudnn::Context& ctx, const cudnn::Tuning* tuning, cudnn::GraphPlan* plan) {
  const fe::DataType_t io = p.dtype == 15 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF;
  auto graph = cudnn::new_graph(ctx, io);
  auto tensor = [&](const char* name, int64_t uid, const Shape& s, fe::DataType_t type) {
    return graph->tensor(fe::graph::Tensor_attributes()
                             .set_name(name)
                             .set_uid(uid)
                             .set_dim(dims(s))
                             .set_stride(cudnn_strides(s))
                             .set_data_type(type));
  };
  auto q = tensor("Q", kQ, q_shape(p), io);
  auto k = tensor("K", kK, k_shape(p), io);
  auto v = tensor("V", kV, v_shape(p), io);
  auto scale = graph->tensor(fe::graph::Tensor_attributes()
                                 .set_name("scale")
                                 .set_uid(kScale)
                                 .set_dim({1, 1, 1, 1})
                                 .set_stride({1, 1, 1, 1})
                                 .set_is_pass_by_value(true)
                                 .set_data_type(fe::DataType_t::FLOAT));
  auto options =
      fe::graph::SDPA_attributes().set_name("sdpa").set_generate_stats(p.lse != nullptr).set_attn_scale(scale);
  if (p.causal == kTopLeft) options.set_causal_mask(true);
  if (p.causal == kBottomRight) options.set_causal_mask_bottom_right(true);
  if (p.bias) options.set_bias(tensor("bias", kBias, bias_shape(p), io));
  auto outputs = graph->sdpa(q, k, v, options);
  auto o = outputs[0];
  auto stats = outputs[1];
  const Shape os = o_shape(p);
  o->set_output(true).set_uid(kO).set_dim(dims(os)).set_stride(cudnn_strides(os)).set_data_type(io);
  if (p.lse) {
    if (!stats) {
      plan->declined = "cudnn-frontend made no statistics output";
      return;
    }
    const Shape ls = {{p.batch, p.heads, p.q_len, 1}, {p.lse_stride[0], p.lse_stride[1], p.lse_stride[2], 1}};
    stats->set_output(true)
        .set_uid(kStats)
        .set_dim(dims(ls))
        .set_stride(cudnn_strides(ls))
        .set_data_type(fe::DataType_t::FLOAT);
  }
  cudnn::finalize(std::move(graph), ctx.handle, {}, plan, tuning);
}

// Runs `p` on the kernel because cuDNN cannot be loaded here; said once.
aotirt_status without_cudnn(const Problem& p, Stream* stream) {
  static std::atomic<bool> said{false};
  if (!said.exchange(true))
    debug_log(std::string(aotirt_last_error_message()) +
              "; float16/bfloat16 attention runs on the straightforward kernel");
  return run_cuda(p, stream);
}

}  // namespace

bool cudnn_takes(const Problem& p) {
  if (p.dtype != 5 && p.dtype != 15) return false;
  if (p.batch < 1 || p.heads < 1 || p.kv_heads < 1 || p.q_len < 1 || p.kv_len < 1) return false;
  for (int64_t size : {p.head_dim, p.value_dim})
    if (size < 8 || size > 256 || size % 8 != 0) return false;
  for (const Shape& s : {q_shape(p), k_shape(p), v_shape(p), o_shape(p)})
    if (!rows_aligned(s)) return false;
  for (const void* data : {p.q, p.k, p.v, static_cast<const void*>(p.out)})
    if (!aligned(data)) return false;
  if (p.bias) {
    if (p.bias_dtype != p.dtype || !aligned(p.bias)) return false;
    const Shape b = bias_shape(p);
    if (b.sizes[3] != p.kv_len || !rows_aligned(b)) return false;  // broadcast keys: the kernel
  }
  if (p.causal == kBottomRight && (p.bias || p.q_len > p.kv_len)) return false;  // rows that see no key
  if (p.lse) {
    if (p.lse_dtype != 6 || p.lse_padding != 0) return false;
    const int64_t sizes[3] = {p.batch, p.heads, p.q_len}, packed[3] = {p.heads * p.q_len, p.q_len, 1};
    for (int d = 0; d < 3; ++d)
      if (sizes[d] > 1 && p.lse_stride[d] != packed[d]) return false;
  }
  return true;
}

aotirt_status run_cudnn(const Problem& p, Stream* stream) {
  // The first use opens cuDNN (not during a capture); a failure to open it
  // leaves float16/bfloat16 attention to the kernel.
  if (!cudnn::load_attempted())
    AOTIRT_TRY(cudnn::refuse_while_capturing(kWho, stream->handle, "load cuDNN"));
  const cudnn::Library* lib = nullptr;
  if (cudnn::load(kWho, &lib) != AOTIRT_OK) return without_cudnn(p, stream);
  cudnn::Context* ctx = nullptr;
  AOTIRT_TRY(cudnn::thread_context(kWho, stream->device, stream->handle, &ctx));
  auto what = [&] { return describe(p); };
  const cudnn::GraphPlan* plan = nullptr;
  const std::string key = key_of(p);
  AOTIRT_TRY(cudnn::plan_for(kWho, *ctx, stream->handle, key, what,
                             [&](cudnn::GraphPlan* made) {
                               // Tuned (AOTIRT_CUDNN_TUNE=1 or wide): the configurations the
                               // heuristics list, and in the wide mode those one knob away,
                               // measured as a convolution's are.
                               cudnn::Tuning tuning;
                               build(p, *ctx, cudnn::tuning_for(kWho, *ctx, key, &tuning) ? &tuning : nullptr, made);
                             },
                             &plan));
  if (!plan->declined.empty()) return run_cuda(p, stream);  // declined: the kernel runs it
  float scale = static_cast<float>(p.scale);  // passed by value: read when the plan is queued
  std::unordered_map<int64_t, void*> pointers = {{kQ, const_cast<void*>(p.q)}, {kK, const_cast<void*>(p.k)},
                                                 {kV, const_cast<void*>(p.v)}, {kO, p.out},
                                                 {kScale, &scale}};
  if (p.bias) pointers[kBias] = const_cast<void*>(p.bias);
  if (p.lse) pointers[kStats] = p.lse;
  return cudnn::execute(kWho, *plan, *ctx, pointers, StreamRef::share(stream), what);
}

#endif  // AOTIRT_HAVE_CUDNN

}  // namespace attention
}  // namespace aotirt
