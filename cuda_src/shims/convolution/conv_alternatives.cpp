// conv_alternatives.h: the tuning's alternatives to cuDNN's engines.

#include "shims/convolution/conv_alternatives.h"

#if defined(AOTIRT_HAVE_CUDNN)

#include <cstring>
#include <string>

#include "runtime/copy.h"
#include "runtime/errors.h"
#include "shims/convolution/conv_gemm.h"
#include "shims/convolution/conv_windows.h"
#include "shims/libs/cudnn_graph.h"

namespace aotirt {
namespace conv_cuda {
namespace {

constexpr const char* kChannelsLastEngine = "cudnn_channels_last";
constexpr const char* kIm2colEngine = "cublas_im2col";

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

// cublas_im2col (conv_view.h's im2col_of), one call of it: the input's
// windows gathered into a dense matrix in one pass, zeros where they reach
// into the padding (conv_windows.h; where 32 bits cannot address it, the
// input copied into zeroed scratch first and the windows gathered from
// that by one strided copy), then cuBLAS: one GEMM into a channels-last
// output, or one per image (in one call) into a contiguous one, the weight
// times the image's windows transposed.
struct Im2colCall {
  const Spec& s;
  Im2col im2col;
  const Operands& ops;
  int device;
  const StreamRef& stream;

  aotirt_status gather(Tensor* matrix) const {
    const Im2col& u = im2col;
    AOTIRT_TRY(new_scratch(6, u.gather_sizes, nullptr, s.dtype, device, stream, matrix));
    WindowIndex index;
    if (window_index_of(s, u, &index))
      return gather_windows(index, ops.x->data(), matrix->data(), matrix->itemsize(), stream->handle);
    Tensor source = *ops.x;  // what the windows are gathered from: the input's 4-D view, or its padded copy
    source.ndim = 4;
    std::memcpy(source.sizes, s.x.sizes, sizeof(s.x.sizes[0]) * 4);
    std::memcpy(source.strides, s.x.strides, sizeof(s.x.strides[0]) * 4);
    if (u.padded) {
      Tensor padded;
      AOTIRT_TRY(new_scratch(4, u.padded_sizes, u.padded_strides, s.dtype, device, stream, &padded));
      AOTIRT_CUDA_TRY(cudaMemsetAsync(padded.data(), 0, static_cast<size_t>(padded.numel()) * padded.itemsize(),
                                      stream->handle));
      Tensor interior = padded;  // where the input lies in it
      std::memcpy(interior.sizes, s.x.sizes, sizeof(s.x.sizes[0]) * 4);
      interior.storage_offset = s.padding[0] * u.padded_strides[2] + s.padding[1] * u.padded_strides[3];
      AOTIRT_TRY(copy_device_to_device(interior, source, stream.get()));
      source = std::move(padded);
    }
    source.ndim = 6;  // the windows: a view, no data moved
    std::memcpy(source.sizes, u.gather_sizes, sizeof(u.gather_sizes));
    std::memcpy(source.strides, u.gather_strides, sizeof(u.gather_strides));
    return copy_device_to_device(*matrix, source, stream.get());
  }

  static aotirt_status run(const void* call) {
    const Im2colCall& c = *static_cast<const Im2colCall*>(call);
    const Im2col& u = c.im2col;
    Tensor matrix;  // [N*Ho*Wo, K]
    AOTIRT_TRY(c.gather(&matrix));
    const void* weight = c.ops.w->data();
    if (u.output == Im2col::Output::kChannelsLast)
      return run_gemm(kName, u.product, c.s.dtype, c.s.tf32, matrix.data(), weight, c.ops.y->data(), c.device,
                      c.stream);
    // Per image, in one call: y[n] [O, Ho*Wo] = weight [O, K] times its windows [Ho*Wo, K] transposed.
    const int64_t images = c.s.x.sizes[0], windows = u.product.rows / images;
    const conv_layout::MatmulShape per_image{u.product.cols, u.product.inner, windows};
    const GemmBatch each_image{images, 0, windows * u.product.inner, u.product.cols * windows};
    return run_gemm(kName, per_image, c.s.dtype, c.s.tf32, weight, matrix.data(), c.ops.y->data(), c.device,
                    c.stream, each_image);
  }
};

// Where cublas_im2col is offered (conv_view.h's im2col_suits says which
// convolutions, and why).
bool im2col_offered(const Spec& s, Im2col* u) {
  return im2col_of(s, u) && gemm_offered(u->product) &&
         im2col_suits(s, *u, static_cast<int64_t>(dtype_itemsize(s.dtype)));
}

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
  Im2col im2col;
  if (im2col_offered(s, &im2col)) return kIm2colEngine;
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
  Im2col im2col;
  if (plan.alternative == kIm2colEngine && im2col_of(s, &im2col)) {
    Im2colCall call{s, im2col, ops, ctx.device, stream};
    const cudnn::Alternative gather_and_gemm{kIm2colEngine, &Im2colCall::run, &call};
    return cudnn::execute(kName, plan, ctx, pointers, stream, what, &gather_and_gemm);
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
