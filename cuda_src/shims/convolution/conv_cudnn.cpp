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
// recorded on disk (shims/libs/cudnn_tuning.h); the measurement also times
// the one alternative way of running the convolution that fits its shape,
// if any (conv_alternatives.h). What a plan depends on: conv_spec.h.
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
#include "shims/convolution/conv_layout.h"
#include "shims/convolution/conv_spec.h"

#if defined(AOTIRT_HAVE_CUDNN)
#include "shims/convolution/conv_alternatives.h"
#include "shims/libs/cudnn_graph.h"
#endif

namespace aotirt {
namespace conv_cuda {
namespace {

aotirt_status bad(const std::string& what) { return fail(AOTIRT_ERROR_VALUE, std::string(kName) + ": " + what); }

aotirt_status require_cuda(const Tensor& t, const char* what, int32_t device) {
  if (t.storage && t.storage->device_type == AOTIRT_DEVICE_CUDA && t.storage->device_index == device)
    return AOTIRT_OK;
  const bool cuda = t.storage && t.storage->device_type == AOTIRT_DEVICE_CUDA;
  return bad(std::string(what) + " must be a CUDA tensor on cuda:" + std::to_string(device) + ", got " +
             (cuda ? "cuda:" + std::to_string(t.storage->device_index) : std::string("a CPU tensor")));
}

#if defined(AOTIRT_HAVE_CUDNN)

namespace fe = cudnn_frontend;

fe::DataType_t data_type(int32_t dtype) {
  switch (dtype) {
    case 5: return fe::DataType_t::HALF;
    case 15: return fe::DataType_t::BFLOAT16;
    default: return fe::DataType_t::FLOAT;
  }
}

std::vector<int64_t> vec(int64_t n, const int64_t* v) { return std::vector<int64_t>(v, v + n); }

}  // namespace

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

namespace {

// Runs the convolution of `s` on `ops` (whose data cuDNN reads and writes
// as they are), queued on `stream`. A tuned plan offers the alternative to
// cuDNN's engines that fits the convolution, if any (conv_alternatives.h).
aotirt_status run(const Spec& s, const Operands& ops, int device, const StreamRef& stream) {
  cudnn::Context* ctx = nullptr;
  AOTIRT_TRY(cudnn::thread_context(kName, device, stream->handle, &ctx));
  auto what = [&] { return describe(s); };
  const cudnn::GraphPlan* plan = nullptr;
  const std::string key = key_of(s);
  AOTIRT_TRY(cudnn::plan_for(kName, *ctx, stream->handle, key, what,
                             [&](cudnn::GraphPlan* made) {
                               cudnn::Tuning tuning;
                               const bool tune = cudnn::tuning_for(kName, *ctx, key, &tuning);
                               if (tune) tuning.alternative = offered_alternative(s);
                               build(s, *ctx, tune ? &tuning : nullptr, made);
                             },
                             &plan));
  if (!plan->declined.empty())
    return fail(AOTIRT_ERROR_AOTI, std::string(kName) + ": cuDNN has no way to run this " + describe(s) + " (" +
                                       plan->declined + ")");
  std::unordered_map<int64_t, void*> pointers = {{kX, ops.x->data()}, {kW, ops.w->data()}, {kY, ops.y->data()}};
  if (plan->alternative.empty()) return cudnn::execute(kName, *plan, *ctx, pointers, stream, what);
  return execute_offering(*plan, *ctx, s, ops, pointers, stream);
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
  Operands ops{input, weight, output.get()};
  int64_t packed[5];
  if (!packed_as(s.x, format, packed) || !aligned(input->data())) {
    AOTIRT_TRY(scratch(*input, packed, stream, &x_copy));
    AOTIRT_TRY(copy_device_to_device(x_copy, *input, stream.get()));
    ops.x = &x_copy;
  }
  std::memcpy(s.x.strides, packed, sizeof(packed));
  if (!packed_as(s.w, format, packed) || !aligned(weight->data())) {
    AOTIRT_TRY(scratch(*weight, packed, stream, &w_copy));
    AOTIRT_TRY(copy_device_to_device(w_copy, *weight, stream.get()));
    ops.w = &w_copy;
  }
  std::memcpy(s.w.strides, packed, sizeof(packed));
  const bool y_packed = packed_as(s.y, format, packed) && aligned(output->data());
  if (!y_packed) {
    AOTIRT_TRY(scratch(*output, packed, stream, &y_scratch));
    ops.y = &y_scratch;
  }
  std::memcpy(s.y.strides, packed, sizeof(packed));
  AOTIRT_TRY(run(s, ops, device, stream));
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
