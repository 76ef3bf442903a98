// aoti_torch_cuda_convolution: aten.convolution on CUDA through cuDNN's
// graph API (cudnn-frontend): a conv_fprop node, or for transposed
// convolutions a conv_dgrad node (the transposed convolution of the input
// with the weight is the data gradient of the convolution that would map
// the output back to the input). 1-D convolutions run as 2-D ones with a
// unit height, as torch runs them; float32, float16 and bfloat16, float
// accumulation; groups (depthwise too), stride, padding, dilation,
// output_padding.
//
// As torch does (Convolution.cpp, cudnn/Conv_v8.cpp):
//  - the operands go to cuDNN in the backend's memory format
//    (conv_layout.h): channels-last(-3d) when the input or the weight is,
//    else contiguous; one that is not already laid out so (or whose data
//    is not 16-byte aligned, as cudnn-frontend assumes) is copied first;
//  - the output is laid out as torch's fake tensor was (conv_layout.h);
//  - float32 may use TF32 (torch.backends.cudnn.allow_tf32 is True by
//    default): engines with the TENSOR_CORE numerical note are deselected
//    for float32 when aotirt's switch is off, those with DOWN_CONVERT_INPUTS
//    always;
//  - the bias is added after the convolution (conv_bias.cu).
// Plans are built once per key (op, dtype, sizes and strides as cuDNN sees
// them, stride/padding/dilation, TF32) in the calling thread's cuDNN
// context, on the first eager call, never during a CUDA-graph capture; later
// calls only execute them, with the workspace from the stream-ordered pool.
// With AOTIRT_CUDNN_TUNE=1 (or wide) the engine is the heuristics' unless
// one measured on this kind of device beats it by more than the noise,
// recorded on disk (shims/libs/cudnn_tuning.h).
// Nothing here waits for the GPU.

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/copy.h"
#include "runtime/errors.h"
#include "shims/shim_helpers.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"
#include "shims/libs/cudnn.h"
#include "aotirt/shim.h"
#include "shims/convolution/conv_bias.h"
#include "shims/convolution/conv_entry.h"
#include "shims/convolution/conv_gemm.h"
#include "shims/convolution/conv_layout.h"
#include "shims/convolution/conv_pad_channels.h"

#if defined(AOTIRT_HAVE_CUDNN)
#include "shims/libs/cudnn_graph.h"
#endif

namespace aotirt {
namespace conv_cuda {
namespace {

constexpr const char* kName = "aoti_torch_cuda_convolution";

aotirt_status bad(const std::string& what) { return fail(AOTIRT_ERROR_VALUE, std::string(kName) + ": " + what); }

std::string list(int64_t n, const int64_t* v) {
  std::string s = "[";
  for (int64_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

aotirt_status require_cuda(const Tensor& t, const char* what, int32_t device) {
  if (t.storage && t.storage->device_type == AOTIRT_DEVICE_CUDA && t.storage->device_index == device)
    return AOTIRT_OK;
  const bool cuda = t.storage && t.storage->device_type == AOTIRT_DEVICE_CUDA;
  return bad(std::string(what) + " must be a CUDA tensor on cuda:" + std::to_string(device) + ", got " +
             (cuda ? "cuda:" + std::to_string(t.storage->device_index) : std::string("a CPU tensor")));
}

#if defined(AOTIRT_HAVE_CUDNN)

// An operand as cuDNN sees it: 4- or 5-D (a 1-D convolution's [N, C, L]
// becomes [N, C, 1, L], as torch's unsqueeze(2) makes it).
struct View {
  int64_t ndim = 0;
  int64_t sizes[5] = {};
  int64_t strides[5] = {};
};

View view_of(const Tensor& t) {
  View v;
  if (t.ndim == 3) {
    v.ndim = 4;
    conv_layout::unsqueeze2(t.sizes, t.strides, v.sizes, v.strides);
    return v;
  }
  v.ndim = t.ndim;
  for (int64_t d = 0; d < t.ndim; ++d) {
    v.sizes[d] = t.sizes[d];
    v.strides[d] = t.strides[d];
  }
  return v;
}

// The dense strides of `format` for v's sizes, and whether v already has them
// (a dimension of size 1 may have any stride: it addresses the same memory).
bool packed_as(const View& v, conv_layout::Format format, int64_t* strides) {
  conv_layout::format_strides(v.ndim, v.sizes, format, strides);
  for (int64_t d = 0; d < v.ndim; ++d)
    if (v.sizes[d] > 1 && v.strides[d] != strides[d]) return false;
  return true;
}

// cudnn-frontend tells cuDNN every operand is 16-byte aligned (its
// Tensor_attributes default, which engines are chosen for; 1.32 refuses to
// execute with a pointer that is not, older ones hand it to such an engine). Pool memory always
// is; a view at an odd offset is copied (torch instead keys its plans on
// each pointer's alignment).
bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// A new tensor of t's sizes and dtype with `strides` (of a view: 4-D for a
// 3-D t, whose unit dimension 2 is dropped), dense, ordered on `stream`.
aotirt_status scratch(const Tensor& t, const int64_t* strides, const StreamRef& stream, Tensor* out) {
  Tensor s;
  s.ndim = t.ndim;
  s.dtype = t.dtype;
  for (int64_t d = 0; d < t.ndim; ++d) {
    s.sizes[d] = t.sizes[d];
    s.strides[d] = t.ndim == 3 ? strides[d < 2 ? d : 3] : strides[d];
  }
  AOTIRT_TRY(allocate_storage(static_cast<size_t>(t.numel()) * t.itemsize(), AOTIRT_DEVICE_CUDA,
                              t.storage->device_index, stream, &s.storage));
  s.stream = stream;
  *out = std::move(s);
  return AOTIRT_OK;
}

// Everything a plan depends on, as cuDNN sees it.
struct Spec {
  bool transposed = false;
  int32_t dtype = 6;
  bool tf32 = false;
  View x, w, y;  // input, weight, output (the data gradient's dy, w, dx when transposed)
  int64_t spatial = 0;  // of the views: 2 or 3
  int64_t stride[3] = {}, padding[3] = {}, dilation[3] = {};
};

std::string describe(const Spec& s) {
  std::string text = std::string(s.transposed ? "transposed " : "") + dtype_name(s.dtype) + " convolution, input " +
                     list(s.x.ndim, s.x.sizes) + " strides " + list(s.x.ndim, s.x.strides) + ", weight " +
                     list(s.w.ndim, s.w.sizes) + " strides " + list(s.w.ndim, s.w.strides) + ", output " +
                     list(s.y.ndim, s.y.sizes) + " strides " + list(s.y.ndim, s.y.strides) + ", stride " +
                     list(s.spatial, s.stride) + ", padding " + list(s.spatial, s.padding) + ", dilation " +
                     list(s.spatial, s.dilation);
  if (s.dtype == 6) text += s.tf32 ? ", TF32 allowed" : ", no TF32";
  return text;
}

void append(std::string* key, int64_t v) { key->append(reinterpret_cast<const char*>(&v), sizeof(v)); }

std::string key_of(const Spec& s) {
  std::string key = "conv";
  append(&key, s.transposed);
  append(&key, s.dtype);
  append(&key, s.dtype == 6 && s.tf32);
  for (const View* v : {&s.x, &s.w, &s.y}) {
    append(&key, v->ndim);
    for (int64_t d = 0; d < v->ndim; ++d) {
      append(&key, v->sizes[d]);
      append(&key, v->strides[d]);
    }
  }
  for (int64_t d = 0; d < s.spatial; ++d) {
    append(&key, s.stride[d]);
    append(&key, s.padding[d]);
    append(&key, s.dilation[d]);
  }
  return key;
}

namespace fe = cudnn_frontend;

enum Uid : int64_t { kX = 1, kW = 2, kY = 3 };

fe::DataType_t data_type(int32_t dtype) {
  switch (dtype) {
    case 5: return fe::DataType_t::HALF;
    case 15: return fe::DataType_t::BFLOAT16;
    default: return fe::DataType_t::FLOAT;
  }
}

std::vector<int64_t> vec(int64_t n, const int64_t* v) { return std::vector<int64_t>(v, v + n); }

// The graph of `s`: one conv_fprop node, or conv_dgrad for a transposed
// convolution; float math; TF32 and down-converting engines deselected as
// torch deselects them.
void build(const Spec& s, cudnn::Context& ctx, const cudnn::Tuning* tuning, cudnn::GraphPlan* plan) {
  const fe::DataType_t io = data_type(s.dtype);
  auto graph = cudnn::new_graph(ctx, io);
  auto operand = [&](const char* name, int64_t uid, const View& v) {
    return graph->tensor(fe::graph::Tensor_attributes()
                             .set_name(name)
                             .set_uid(uid)
                             .set_dim(vec(v.ndim, v.sizes))
                             .set_stride(vec(v.ndim, v.strides))
                             .set_data_type(io));
  };
  auto x = operand("input", kX, s.x);
  auto w = operand("weight", kW, s.w);
  auto configure = [&](auto attributes) {
    attributes.set_padding(vec(s.spatial, s.padding))
        .set_stride(vec(s.spatial, s.stride))
        .set_dilation(vec(s.spatial, s.dilation))
        .set_compute_data_type(fe::DataType_t::FLOAT);
    return attributes;
  };
  auto y = s.transposed
               ? graph->conv_dgrad(x, w, configure(fe::graph::Conv_dgrad_attributes().set_name("conv_transpose")))
               : graph->conv_fprop(x, w, configure(fe::graph::Conv_fprop_attributes().set_name("conv")));
  y->set_output(true)
      .set_uid(kY)
      .set_dim(vec(s.y.ndim, s.y.sizes))
      .set_stride(vec(s.y.ndim, s.y.strides))
      .set_data_type(io);
  std::vector<fe::NumericalNote_t> deselected = {fe::NumericalNote_t::DOWN_CONVERT_INPUTS};
  if (s.dtype == 6 && !s.tf32) deselected.push_back(fe::NumericalNote_t::TENSOR_CORE);
  cudnn::finalize(std::move(graph), ctx.handle, deselected, plan, tuning);
}

// The product of a convolution that is one (conv_layout::as_matmul); false
// for one that is not.
bool matmul_of(const Spec& s, conv_layout::MatmulShape* product) {
  return conv_layout::as_matmul(s.x.ndim, s.x.sizes, s.x.strides, s.w.sizes, s.w.strides, s.y.sizes, s.y.strides,
                                s.stride, s.padding, s.transposed, product);
}

// One call's cuBLAS GEMM (conv_gemm.h), as the tuning's alternative runs it.
struct GemmCall {
  const Spec& s;
  conv_layout::MatmulShape product;
  const void *x, *w;
  void* y;
  int device;
  const StreamRef& stream;
  static aotirt_status run(const void* call) {
    const GemmCall& c = *static_cast<const GemmCall*>(call);
    return run_gemm(kName, c.product, c.s.dtype, c.s.tf32, c.x, c.w, c.y, c.device, c.stream);
  }
};

// The convolution of `s` with its input's and weight's channels padded to
// 16-byte rows (conv_pad_channels.h), for a single-group, non-transposed
// 2-D (or 1-D) convolution of few input channels whose operands are all
// channels-last (Inductor hands a stem so: a 1-D convolution of one
// channel is left contiguous, and keeps its planes); false for any other.
bool padded_spec(const Spec& s, Spec* padded) {
  const int64_t channels = s.x.sizes[1];
  const int64_t to = padded_channels(channels, dtype_itemsize(s.dtype));
  int64_t packed[5];
  if (s.transposed || s.x.ndim != 4 || s.w.sizes[1] != channels || to == 0 ||
      !packed_as(s.x, conv_layout::Format::ChannelsLast, packed) ||
      !packed_as(s.w, conv_layout::Format::ChannelsLast, packed) ||
      !packed_as(s.y, conv_layout::Format::ChannelsLast, packed) ||
      !pad_fits(s.x.sizes[0] * s.x.sizes[2] * s.x.sizes[3], to) ||
      !pad_fits(s.w.sizes[0] * s.w.sizes[2] * s.w.sizes[3], to))
    return false;
  *padded = s;
  for (View* v : {&padded->x, &padded->w}) {
    v->sizes[1] = to;
    conv_layout::format_strides(4, v->sizes, conv_layout::Format::ChannelsLast, v->strides);
  }
  return true;
}

// One call's padded convolution, as the tuning's alternative runs it: the
// input and the weight padded into pool memory, then the padded problem's
// own plan (cuDNN's heuristics' engine for it, built by the measurement's
// first run, an eager one).
struct PaddedCall {
  const Spec& padded;
  int64_t channels;  // the call's own, before padding
  cudnn::Context* ctx;
  const void *x, *w;
  void* y;
  int device;
  const StreamRef& stream;
  static aotirt_status run(const void* call) {
    const PaddedCall& c = *static_cast<const PaddedCall*>(call);
    const Spec& p = c.padded;
    auto what = [&] { return describe(p) + " (input channels padded)"; };
    const cudnn::GraphPlan* plan = nullptr;
    AOTIRT_TRY(cudnn::plan_for(kName, *c.ctx, c.stream->handle, "padded" + key_of(p), what,
                               [&](cudnn::GraphPlan* made) { build(p, *c.ctx, nullptr, made); }, &plan));
    if (!plan->declined.empty())
      return fail(AOTIRT_ERROR_AOTI, std::string(kName) + ": cuDNN has no way to run the " + what() + " (" +
                                         plan->declined + ")");
    const size_t item = dtype_itemsize(p.dtype);
    const int64_t to = p.x.sizes[1];
    // Channels-last: the input is N * H * W rows of its channels, the weight K * kh * kw.
    const int64_t x_rows = p.x.sizes[0] * p.x.sizes[2] * p.x.sizes[3];
    const int64_t w_rows = p.w.sizes[0] * p.w.sizes[2] * p.w.sizes[3];
    StorageRef x_padded, w_padded;  // freed stream-ordered, after the convolution
    AOTIRT_TRY(allocate_storage(static_cast<size_t>(x_rows * to) * item, AOTIRT_DEVICE_CUDA, c.device, c.stream,
                                &x_padded));
    AOTIRT_TRY(allocate_storage(static_cast<size_t>(w_rows * to) * item, AOTIRT_DEVICE_CUDA, c.device, c.stream,
                                &w_padded));
    AOTIRT_TRY(pad_channels({c.x, x_padded->data, x_rows}, {c.w, w_padded->data, w_rows}, c.channels, to, item,
                            c.stream->handle));
    std::unordered_map<int64_t, void*> pointers = {{kX, x_padded->data}, {kW, w_padded->data}, {kY, c.y}};
    return cudnn::execute(kName, *plan, *c.ctx, pointers, c.stream, what);
  }
};

// Runs the convolution of `s` from `x` and `w` into `y`, queued on `stream`.
// Tuned, a convolution that is one matrix product offers cuBLAS's GEMM
// beside cuDNN's engines (conv_gemm.h), and one of few input channels the
// same convolution on padded channels (conv_pad_channels.h): decided when
// its plan is built, which names the one it offered.
aotirt_status run(const Spec& s, const void* x, const void* w, void* y, int device, const StreamRef& stream) {
  cudnn::Context* ctx = nullptr;
  AOTIRT_TRY(cudnn::thread_context(kName, device, stream->handle, &ctx));
  auto what = [&] { return describe(s); };
  const cudnn::GraphPlan* plan = nullptr;
  const std::string key = key_of(s);
  conv_layout::MatmulShape product;
  Spec padded;
  AOTIRT_TRY(cudnn::plan_for(kName, *ctx, stream->handle, key, what,
                             [&](cudnn::GraphPlan* made) {
                               cudnn::Tuning tuning;
                               const bool tune = cudnn::tuning_for(kName, *ctx, key, &tuning);
                               if (tune && matmul_of(s, &product) && gemm_offered(product))
                                 tuning.alternative = kGemmEngine;
                               else if (tune && padded_spec(s, &padded))
                                 tuning.alternative = kPaddedChannelsEngine;
                               build(s, *ctx, tune ? &tuning : nullptr, made);
                             },
                             &plan));
  if (!plan->declined.empty())
    return fail(AOTIRT_ERROR_AOTI, std::string(kName) + ": cuDNN has no way to run this " + describe(s) + " (" +
                                       plan->declined + ")");
  std::unordered_map<int64_t, void*> pointers = {
      {kX, const_cast<void*>(x)}, {kW, const_cast<void*>(w)}, {kY, y}};
  if (plan->alternative.empty()) return cudnn::execute(kName, *plan, *ctx, pointers, stream, what);
  if (plan->alternative == kGemmEngine) {
    matmul_of(s, &product);  // true: the plan was built with the GEMM offered
    GemmCall call{s, product, x, w, y, device, stream};
    const cudnn::Alternative gemm{kGemmEngine, &GemmCall::run, &call};
    return cudnn::execute(kName, *plan, *ctx, pointers, stream, what, &gemm);
  }
  padded_spec(s, &padded);  // true: the plan was built with the padded convolution offered
  PaddedCall call{padded, s.x.sizes[1], ctx, x, w, y, device, stream};
  const cudnn::Alternative padding{kPaddedChannelsEngine, &PaddedCall::run, &call};
  return cudnn::execute(kName, *plan, *ctx, pointers, stream, what, &padding);
}

// The convolution of a checked call: the output laid out as torch lays it
// out, the operands in the backend's format, cuDNN, the bias.
aotirt_status compute(const Tensor* input, const Tensor* weight, const Tensor* bias, const conv_layout::Geometry& g,
                      bool transposed, Tensor** ret) {
  const int32_t device = input->storage->device_index;
  const int32_t dtype = input->dtype;
  const int64_t k = g.k;
  int64_t out_strides[5];
  conv_layout::Format format;
  conv_layout::output_strides(true, k, input->sizes, input->strides, weight->sizes, weight->strides, g.out_sizes,
                              false, out_strides, &format);
  DeviceGuard guard;
  AOTIRT_TRY(guard.enter(device));
  StreamRef stream;
  AOTIRT_TRY(stream_for_device(device, &stream));
  AOTIRT_TRY(use_on(*input, stream.get()));
  AOTIRT_TRY(use_on(*weight, stream.get()));
  if (bias) AOTIRT_TRY(use_on(*bias, stream.get()));
  Tensor* made = nullptr;
  AOTIRT_TRY(new_tensor(k, g.out_sizes, out_strides, dtype, AOTIRT_DEVICE_CUDA, device, &made));
  OwnedTensor output(made);
  if (output->numel() == 0) {  // no batch, no channels, or no output channels: nothing to compute
    *ret = output.release();
    return AOTIRT_OK;
  }

  Spec s;
  s.transposed = transposed;
  s.dtype = dtype;
  s.tf32 = dtype == 6 && cudnn::allow_tf32();
  s.x = view_of(*input);
  s.w = view_of(*weight);
  s.y = view_of(*output);
  s.spatial = s.x.ndim - 2;
  for (int64_t d = 0; d < s.spatial; ++d) {
    const int64_t src = d - (s.spatial - g.spatial);  // the unit height of a 1-D convolution has none
    s.stride[d] = src < 0 ? 1 : g.stride[src];
    s.padding[d] = src < 0 ? 0 : g.padding[src];
    s.dilation[d] = src < 0 ? 1 : g.dilation[src];
  }
  // Every operand in the backend's format: copies of those laid out otherwise.
  Tensor x_copy, w_copy, y_scratch;
  const void* x = input->data();
  const void* w = weight->data();
  void* y = output->data();
  int64_t packed[5];
  if (!packed_as(s.x, format, packed) || !aligned(x)) {
    AOTIRT_TRY(scratch(*input, packed, stream, &x_copy));
    AOTIRT_TRY(copy_device_to_device(x_copy, *input, stream.get()));
    x = x_copy.data();
  }
  std::memcpy(s.x.strides, packed, sizeof(packed));
  if (!packed_as(s.w, format, packed) || !aligned(w)) {
    AOTIRT_TRY(scratch(*weight, packed, stream, &w_copy));
    AOTIRT_TRY(copy_device_to_device(w_copy, *weight, stream.get()));
    w = w_copy.data();
  }
  std::memcpy(s.w.strides, packed, sizeof(packed));
  const bool y_packed = packed_as(s.y, format, packed) && aligned(y);
  if (!y_packed) {
    AOTIRT_TRY(scratch(*output, packed, stream, &y_scratch));
    y = y_scratch.data();
  }
  std::memcpy(s.y.strides, packed, sizeof(packed));
  AOTIRT_TRY(run(s, x, w, y, device, stream));
  if (!y_packed) AOTIRT_TRY(copy_device_to_device(*output, y_scratch, stream.get()));
  if (bias) AOTIRT_TRY(add_channel_bias(*output, *bias, stream.get()));
  *ret = output.release();
  return AOTIRT_OK;
}

#endif  // AOTIRT_HAVE_CUDNN

aotirt_status convolution(const ConvolutionArgs& a, Tensor** ret) {
  const Tensor *input = a.input, *weight = a.weight, *bias = a.bias;
  const bool transposed = a.transposed;
  const int64_t groups = a.groups;
  if (!input || !weight || !ret) return null_argument(kName);
  const int32_t device = input->storage ? input->storage->device_index : 0;
  AOTIRT_TRY(require_cuda(*input, "input", device));
  AOTIRT_TRY(require_cuda(*weight, "weight", device));
  if (bias) AOTIRT_TRY(require_cuda(*bias, "bias", device));
  const int32_t dtype = input->dtype;
  if (dtype != AOTIRT_DTYPE_FLOAT32 && dtype != AOTIRT_DTYPE_FLOAT16 && dtype != AOTIRT_DTYPE_BFLOAT16)
    return fail(AOTIRT_ERROR_TYPE, std::string(kName) + ": " + dtype_name(dtype) +
                                       " inputs are not supported (float32, float16, bfloat16)");
  if (weight->dtype != dtype || (bias && bias->dtype != dtype))
    return fail(AOTIRT_ERROR_TYPE, std::string(kName) + ": input, weight and bias must have one dtype, got " +
                                       dtype_name(dtype) + ", " + dtype_name(weight->dtype) +
                                       (bias ? std::string(" and ") + dtype_name(bias->dtype) : std::string()));
  conv_layout::Geometry g;
  const std::string wrong = conv_layout::describe(
      input->ndim, input->sizes, weight->ndim, weight->sizes, bias ? bias->ndim : 0, bias ? bias->sizes : nullptr,
      a.stride, a.stride_len, a.padding, a.padding_len, a.dilation, a.dilation_len, transposed, a.output_padding,
      a.output_padding_len, groups, &g);
  if (!wrong.empty()) return bad(wrong);
  for (int64_t d = 0; transposed && d < g.spatial; ++d)
    if (g.output_padding[d] >= g.stride[d])
      return bad("output_padding " + std::to_string(g.output_padding[d]) + " in spatial dimension " +
                 std::to_string(d) + " must be smaller than the stride (" + std::to_string(g.stride[d]) +
                 ") for cuDNN's transposed convolution (torch too leaves such calls to a slower kernel)");
  if (input->numel() == 0 && input->sizes[0] != 0 && input->sizes[1] != 0)
    return bad("only inputs without a batch or without channels may be empty, got " +
               list(input->ndim, input->sizes));
#if defined(AOTIRT_HAVE_CUDNN)
  return compute(input, weight, bias, g, transposed, ret);
#else
  return fail(AOTIRT_ERROR_AOTI,
              std::string(kName) + ": aotirt was built without cuDNN, which CUDA convolutions need: install the "
                                   "cuDNN and cudnn-frontend headers (pip install nvidia-cudnn-cu13 "
                                   "nvidia-cudnn-frontend) and rebuild aotirt (AOTIRT_CUDNN_INCLUDE and "
                                   "AOTIRT_CUDNN_FRONTEND_INCLUDE name other header folders)");
#endif
}

}  // namespace
}  // namespace conv_cuda
}  // namespace aotirt

AOTIRT_DEFINE_CONVOLUTION_SHIM(aoti_torch_cuda_convolution, aotirt::conv_cuda::convolution)
