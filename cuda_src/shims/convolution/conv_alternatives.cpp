// conv_alternatives.h: the tuning's alternatives to cuDNN's engines.

#include "shims/convolution/conv_alternatives.h"

#if defined(AOTIRT_HAVE_CUDNN)

#include <cstring>
#include <string>

#include "runtime/copy.h"
#include "runtime/errors.h"
#include "shims/convolution/conv_gemm.h"
#include "shims/convolution/conv_pad_channels.h"
#include "shims/libs/cudnn_graph.h"

namespace aotirt {
namespace conv_cuda {
namespace {

constexpr const char* kChannelsLastEngine = "cudnn_channels_last";
constexpr const char* kPatchesEngine = "cublas_patches";

// The plan of `p`, another convolution an alternative of `main` (the
// call's own plan) runs instead: cuDNN's heuristics' engine for it, cached
// under its own key and built by the alternative's first run, which is the
// measurement's (an eager call: never during a capture); later calls find
// it in `main`.
aotirt_status side_plan(const cudnn::GraphPlan& main, cudnn::Context& ctx, const StreamRef& stream, const Spec& p,
                        const char* kind, const cudnn::GraphPlan** out) {
  auto what = [&] { return describe(p) + " (" + kind + ")"; };
  if (main.alternative_plan) {
    *out = main.alternative_plan;
  } else {
    AOTIRT_TRY(cudnn::plan_for(kName, ctx, stream->handle, std::string(kind) + key_of(p), what,
                               [&](cudnn::GraphPlan* made) { build(p, ctx, nullptr, made); }, out));
    main.alternative_plan = *out;
  }
  if (!(*out)->declined.empty())
    return fail(AOTIRT_ERROR_AOTI,
                std::string(kName) + ": cuDNN has no way to run the " + what() + " (" + (*out)->declined + ")");
  return AOTIRT_OK;
}

// cublas_gemm: one call's GEMM (conv_gemm.h).
struct GemmCall {
  const Spec& s;
  conv_layout::MatmulShape product;
  const Operands& ops;
  int device;
  const StreamRef& stream;
  static aotirt_status run(const void* call) {
    const GemmCall& c = *static_cast<const GemmCall*>(call);
    return run_gemm(kName, c.product, c.s.dtype, c.s.tf32, c.ops.x->data(), c.ops.w->data(), c.ops.y->data(),
                    c.device, c.stream);
  }
};

// cublas_patches (conv_view.h's patches_of), one call of it: the input's
// patches gathered by one strided copy into pool memory, one GEMM with the
// weight as it lies, into the output where it is dense channels-last, else
// into channels-last scratch copied into it.
struct PatchesCall {
  const Spec& s;
  PatchProduct patches;
  const Operands& ops;
  int device;
  const StreamRef& stream;
  static aotirt_status run(const void* call) {
    const PatchesCall& c = *static_cast<const PatchesCall*>(call);
    const PatchProduct& p = c.patches;
    Tensor source = *c.ops.x;  // the input seen as its patches: a view, no data moved
    source.ndim = 6;
    std::memcpy(source.sizes, p.gather_sizes, sizeof(p.gather_sizes));
    std::memcpy(source.strides, p.gather_strides, sizeof(p.gather_strides));
    Tensor matrix;  // the same sizes, dense: [N*Ho*Wo, K]
    matrix.ndim = 6;
    matrix.dtype = source.dtype;
    std::memcpy(matrix.sizes, p.gather_sizes, sizeof(p.gather_sizes));
    contiguous_strides(6, matrix.sizes, matrix.strides);
    AOTIRT_TRY(allocate_storage(static_cast<size_t>(matrix.numel()) * matrix.itemsize(), AOTIRT_DEVICE_CUDA, c.device,
                                c.stream, &matrix.storage));
    matrix.stream = c.stream;
    AOTIRT_TRY(copy_device_to_device(matrix, source, c.stream.get()));
    if (p.output_in_place)
      return run_gemm(kName, p.product, c.s.dtype, c.s.tf32, matrix.data(), c.ops.w->data(), c.ops.y->data(),
                      c.device, c.stream);
    int64_t channels_last[4];
    conv_layout::format_strides(4, c.s.y.sizes, conv_layout::Format::ChannelsLast, channels_last);
    Tensor landing;
    AOTIRT_TRY(scratch(*c.ops.y, channels_last, c.stream, &landing));
    AOTIRT_TRY(run_gemm(kName, p.product, c.s.dtype, c.s.tf32, matrix.data(), c.ops.w->data(), landing.data(),
                        c.device, c.stream));
    return copy_device_to_device(*c.ops.y, landing, c.stream.get());
  }
};

// cudnn_padded_channels (conv_view.h's padded_spec), one call of it: input
// and weight padded into pool memory (every call: the weight may change
// between calls), then the padded plan.
struct PaddedCall {
  const cudnn::GraphPlan& main;
  const Spec& padded;
  int64_t channels;  // the call's own, before padding
  cudnn::Context& ctx;
  const Operands& ops;
  const StreamRef& stream;
  static aotirt_status run(const void* call) {
    const PaddedCall& c = *static_cast<const PaddedCall*>(call);
    const Spec& p = c.padded;
    const cudnn::GraphPlan* plan = nullptr;
    AOTIRT_TRY(side_plan(c.main, c.ctx, c.stream, p, "input channels padded", &plan));
    const size_t item = dtype_itemsize(p.dtype);
    const int64_t to = p.x.sizes[1];
    // Channels-last: the input is N * H * W rows of its channels, the weight K * kh * kw.
    const int64_t x_rows = p.x.sizes[0] * p.x.sizes[2] * p.x.sizes[3];
    const int64_t w_rows = p.w.sizes[0] * p.w.sizes[2] * p.w.sizes[3];
    StorageRef x_padded, w_padded;  // freed stream-ordered, after the convolution
    AOTIRT_TRY(allocate_storage(static_cast<size_t>(x_rows * to) * item, AOTIRT_DEVICE_CUDA, c.ctx.device, c.stream,
                                &x_padded));
    AOTIRT_TRY(allocate_storage(static_cast<size_t>(w_rows * to) * item, AOTIRT_DEVICE_CUDA, c.ctx.device, c.stream,
                                &w_padded));
    AOTIRT_TRY(pad_channels({c.ops.x->data(), x_padded->data, x_rows}, {c.ops.w->data(), w_padded->data, w_rows},
                            c.channels, to, item, c.stream->handle));
    std::unordered_map<int64_t, void*> pointers = {
        {kX, x_padded->data}, {kW, w_padded->data}, {kY, c.ops.y->data()}};
    return cudnn::execute(kName, *plan, c.ctx, pointers, c.stream, [&] { return describe(p); });
  }
};

// cudnn_channels_last (conv_view.h's channels_last_spec), one call of it:
// input and weight copied to channels-last scratch, the channels-last plan
// into a scratch output, copied back into the call's.
struct ChannelsLastCall {
  const cudnn::GraphPlan& main;
  const Spec& cl;
  cudnn::Context& ctx;
  const Operands& ops;
  const StreamRef& stream;
  static aotirt_status run(const void* call) {
    const ChannelsLastCall& c = *static_cast<const ChannelsLastCall*>(call);
    const cudnn::GraphPlan* plan = nullptr;
    AOTIRT_TRY(side_plan(c.main, c.ctx, c.stream, c.cl, "channels-last copies", &plan));
    Tensor x, w, y;
    AOTIRT_TRY(scratch(*c.ops.x, c.cl.x.strides, c.stream, &x));
    AOTIRT_TRY(copy_device_to_device(x, *c.ops.x, c.stream.get()));
    AOTIRT_TRY(scratch(*c.ops.w, c.cl.w.strides, c.stream, &w));
    AOTIRT_TRY(copy_device_to_device(w, *c.ops.w, c.stream.get()));
    AOTIRT_TRY(scratch(*c.ops.y, c.cl.y.strides, c.stream, &y));
    std::unordered_map<int64_t, void*> pointers = {{kX, x.data()}, {kW, w.data()}, {kY, y.data()}};
    AOTIRT_TRY(cudnn::execute(kName, *plan, c.ctx, pointers, c.stream, [&] { return describe(c.cl); }));
    return copy_device_to_device(*c.ops.y, y, c.stream.get());
  }
};

}  // namespace

const char* offered_alternative(const Spec& s) {
  conv_layout::MatmulShape product;
  Spec other;
  if (matmul_of(s, &product) && gemm_offered(product)) return kGemmEngine;
  PatchProduct patches;
  if (patches_of(s, &patches) && gemm_offered(patches.product)) return kPatchesEngine;
  if (padded_spec(s, dtype_itemsize(s.dtype), &other)) return kPaddedChannelsEngine;
  if (channels_last_spec(s, &other)) return kChannelsLastEngine;
  return "";
}

aotirt_status execute_offering(const cudnn::GraphPlan& plan, cudnn::Context& ctx, const Spec& s, const Operands& ops,
                               std::unordered_map<int64_t, void*>& pointers, const StreamRef& stream) {
  auto what = [&] { return describe(s); };
  Spec other;
  if (plan.alternative == kGemmEngine) {
    GemmCall call{s, {}, ops, ctx.device, stream};
    matmul_of(s, &call.product);  // true: offered_alternative named it
    const cudnn::Alternative gemm{kGemmEngine, &GemmCall::run, &call};
    return cudnn::execute(kName, plan, ctx, pointers, stream, what, &gemm);
  }
  PatchProduct patches;
  if (plan.alternative == kPatchesEngine && patches_of(s, &patches)) {
    PatchesCall call{s, patches, ops, ctx.device, stream};
    const cudnn::Alternative gather_and_gemm{kPatchesEngine, &PatchesCall::run, &call};
    return cudnn::execute(kName, plan, ctx, pointers, stream, what, &gather_and_gemm);
  }
  if (plan.alternative == kPaddedChannelsEngine && padded_spec(s, dtype_itemsize(s.dtype), &other)) {
    PaddedCall call{plan, other, s.x.sizes[1], ctx, ops, stream};
    const cudnn::Alternative padded{kPaddedChannelsEngine, &PaddedCall::run, &call};
    return cudnn::execute(kName, plan, ctx, pointers, stream, what, &padded);
  }
  if (plan.alternative == kChannelsLastEngine && channels_last_spec(s, &other)) {
    ChannelsLastCall call{plan, other, ctx, ops, stream};
    const cudnn::Alternative channels_last{kChannelsLastEngine, &ChannelsLastCall::run, &call};
    return cudnn::execute(kName, plan, ctx, pointers, stream, what, &channels_last);
  }
  return cudnn::execute(kName, plan, ctx, pointers, stream, what);
}

}  // namespace conv_cuda
}  // namespace aotirt

#endif  // AOTIRT_HAVE_CUDNN
