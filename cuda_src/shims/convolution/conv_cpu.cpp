// aoti_torch_cpu_convolution: aten.convolution on the CPU, for 1-, 2- and
// 3-D convolutions (groups, stride, padding, dilation), not transposed.
// Plain loops, accumulating in double whatever the element type.
//
// The output is laid out as torch lays it out (its fake-tensor rule for
// convolution, which the model's generated code was compiled against):
// channels-last when the input or the weight is channels-last, else
// contiguous. Inductor does make CPU convolutions channels-last.

#include <initializer_list>
#include <string>
#include <type_traits>

#include "aotirt/shim.h"
#include "runtime/dtypes.h"
#include "runtime/errors.h"
#include "runtime/tensor.h"
#include "shims/convolution/conv.h"
#include "shims/host_elements.h"
#include "shims/shim_helpers.h"

namespace aotirt {
namespace conv {
namespace {

aotirt_status bad(const char* name, const std::string& what) {
  return fail(AOTIRT_ERROR_VALUE, std::string(name) + ": " + what);
}

aotirt_status require_device(const char* name, const char* what, const Tensor& t, int32_t device_type,
                             int32_t device_index) {
  if (device_type == AOTIRT_DEVICE_CPU) return host::require_cpu(t, name, what);
  if (t.storage && t.storage->device_type == device_type && t.storage->device_index == device_index)
    return AOTIRT_OK;
  return bad(name, std::string(what) + " must be a CUDA tensor on cuda:" + std::to_string(device_index));
}

// aten.convolution's int lists: one value for every spatial dimension, or
// a single value for all of them.
aotirt_status expand(const char* name, const char* what, const int64_t* values, int64_t len, int64_t spatial,
                     int64_t* out) {
  if (len != 1 && len != spatial)
    return bad(name, std::string(what) + " has " + std::to_string(len) + " values; the convolution has " +
                         std::to_string(spatial) + " spatial dimensions");
  if (!values) return null_argument(name);
  for (int64_t d = 0; d < spatial; ++d) out[d] = values[len == 1 ? 0 : d];
  return AOTIRT_OK;
}

}  // namespace

aotirt_status describe(const char* name, int32_t device_type, const Tensor* input, const Tensor* weight,
                       const Tensor* bias, const int64_t* stride, int64_t stride_len, const int64_t* padding,
                       int64_t padding_len, const int64_t* dilation, int64_t dilation_len, int32_t transposed,
                       int64_t groups, Problem* problem) {
  if (!input || !weight) return null_argument(name);
  if (transposed)
    return bad(name, "transposed convolutions are not supported (aotirt implements aten.convolution with "
                     "transposed=False only)");
  const int32_t device_index = input->storage ? input->storage->device_index : 0;
  AOTIRT_TRY(require_device(name, "input", *input, device_type, device_index));
  AOTIRT_TRY(require_device(name, "weight", *weight, device_type, device_index));
  const int64_t k = weight->ndim;
  if (k < 3 || k > 5)
    return bad(name, "the weight must have 3, 4 or 5 dimensions (1-, 2- or 3-D convolution), got " +
                         std::to_string(k));
  if (input->ndim != k)
    return bad(name, "the input must have the weight's " + std::to_string(k) +
                         " dimensions [batch, channels, ...], got " + std::to_string(input->ndim));
  if (!is_floating(input->dtype))
    return fail(AOTIRT_ERROR_TYPE, std::string(name) + ": " + dtype_name(input->dtype) +
                                       " inputs are not supported (float32, float64, float16, bfloat16)");
  if (weight->dtype != input->dtype || (bias && bias->dtype != input->dtype))
    return fail(AOTIRT_ERROR_TYPE, std::string(name) + ": input, weight and bias must have one dtype");
  if (groups < 1) return bad(name, "groups must be positive, got " + std::to_string(groups));
  const int64_t out_channels = weight->sizes[0];
  if (input->sizes[1] != weight->sizes[1] * groups)
    return bad(name, "the input has " + std::to_string(input->sizes[1]) + " channels; the weight expects " +
                         std::to_string(weight->sizes[1]) + " per group times " + std::to_string(groups) +
                         " groups");
  if (out_channels % groups != 0)
    return bad(name, "the weight's " + std::to_string(out_channels) + " output channels do not split into " +
                         std::to_string(groups) + " groups");
  if (bias) {
    AOTIRT_TRY(require_device(name, "bias", *bias, device_type, device_index));
    if (bias->ndim != 1 || bias->sizes[0] != out_channels)
      return bad(name, "the bias must have one value per output channel (" + std::to_string(out_channels) + ")");
  }

  const int64_t spatial = k - 2;
  int64_t s[3], p[3], dl[3];
  AOTIRT_TRY(expand(name, "stride", stride, stride_len, spatial, s));
  AOTIRT_TRY(expand(name, "padding", padding, padding_len, spatial, p));
  AOTIRT_TRY(expand(name, "dilation", dilation, dilation_len, spatial, dl));
  Problem q;
  q.input = input;
  q.weight = weight;
  q.bias = bias;
  q.groups = groups;
  q.ndim = k;
  Geometry& g = q.g;
  q.out_sizes[0] = input->sizes[0];
  q.out_sizes[1] = out_channels;
  for (int64_t i = 0; i < 3; ++i) {
    // Spatial dimension i of 3; the first 3 - spatial are the padding ones.
    const int64_t d = i - (3 - spatial);
    const bool real = d >= 0;
    g.in[i] = real ? input->sizes[2 + d] : 1;
    g.kernel[i] = real ? weight->sizes[2 + d] : 1;
    g.stride[i] = real ? s[d] : 1;
    g.padding[i] = real ? p[d] : 0;
    g.dilation[i] = real ? dl[d] : 1;
    g.in_stride[i] = real ? input->strides[2 + d] : 0;
    g.weight_stride[i] = real ? weight->strides[2 + d] : 0;
    if (!real) {
      g.out[i] = 1;
      continue;
    }
    if (g.stride[i] < 1 || g.dilation[i] < 1 || g.padding[i] < 0)
      return bad(name, "strides and dilations must be positive and paddings non-negative");
    const int64_t span = g.dilation[i] * (g.kernel[i] - 1) + 1;
    const int64_t padded = g.in[i] + 2 * g.padding[i];
    if (padded < span)
      return bad(name, "spatial dimension " + std::to_string(d) + " is too small: " + std::to_string(g.in[i]) +
                           " padded by " + std::to_string(g.padding[i]) +
                           " on each side is shorter than the dilated kernel (" + std::to_string(span) + ")");
    g.out[i] = (padded - span) / g.stride[i] + 1;
    q.out_sizes[2 + d] = g.out[i];
  }
  if (input->sizes[1] == 0) q.out_sizes[1] = 0;  // torch: no input channels, no output channels
  *problem = q;
  return AOTIRT_OK;
}

}  // namespace conv

namespace {

constexpr const char* kName = "aoti_torch_cpu_convolution";

using conv::Geometry;

enum class Format { Contiguous, ChannelsLast, ChannelsLast3d };

// c10's is_channels_last_strides_2d_s4 / _3d_s5: do the strides walk the
// dimensions in the order C, W, (H,) ..., N? `order` lists that walk.
bool strides_walk(const int64_t* sizes, const int64_t* strides, std::initializer_list<int> order) {
  int64_t min = 0;
  if (strides[1] == 0) return false;  // a trivial channel dimension: contiguous by default
  for (int d : order) {
    if (sizes[d] == 0) return false;
    if (strides[d] < min) return false;
    if (d == 0 && min == strides[1]) return false;  // ambiguous N111 layouts count as contiguous
    min = strides[d];
    if (sizes[d] > 1) min *= sizes[d];
  }
  return true;
}

// torch's Tensor.suggest_memory_format().
Format suggest_format(int64_t ndim, const int64_t* sizes, const int64_t* strides) {
  if (ndim == 4 && strides_walk(sizes, strides, {1, 3, 2, 0})) return Format::ChannelsLast;
  if (ndim == 5 && strides_walk(sizes, strides, {1, 4, 3, 2, 0})) return Format::ChannelsLast3d;
  return Format::Contiguous;
}

// Channels-last strides of a 4- or 5-D shape (c10's get_channels_last_strides_*).
void channels_last_strides(int64_t ndim, const int64_t* sizes, int64_t* strides) {
  strides[1] = 1;
  strides[ndim - 1] = sizes[1];
  for (int64_t d = ndim - 2; d >= 2; --d) strides[d] = strides[d + 1] * sizes[d + 1];
  strides[0] = strides[2] * sizes[2];
}

// `t.to(memory_format=format)` of a contiguous tensor of `sizes`: unchanged
// when it already suggests that format, else restrided.
void restride(int64_t ndim, const int64_t* sizes, Format format, int64_t* strides) {
  contiguous_strides(ndim, sizes, strides);
  if (format == Format::Contiguous || suggest_format(ndim, sizes, strides) == format) return;
  channels_last_strides(ndim, sizes, strides);
}

// The output strides torch gives (fake_impls.py's conv, after
// _conv_determine_backend_memory_format for the CPU backends): the 2-D
// backends (mkldnn, thnn) are channels-last when the input or the weight
// is; 1-D convolutions decide as 2-D ones over an unsqueezed, contiguous
// input; 3-D ones are channels-last only through mkldnn, which takes no
// float64.
void output_strides(const Tensor& input, const Tensor& weight, const int64_t* out_sizes, int64_t* out_strides) {
  const int64_t k = weight.ndim;
  Format format = Format::Contiguous;
  if (k == 3) {
    const int64_t in4_sizes[4] = {input.sizes[0], input.sizes[1], 1, input.sizes[2]};
    int64_t in4_strides[4];
    contiguous_strides(4, in4_sizes, in4_strides);
    const int64_t w4_sizes[4] = {weight.sizes[0], weight.sizes[1], 1, weight.sizes[2]};
    const int64_t w4_strides[4] = {weight.strides[0], weight.strides[1], weight.sizes[2] * weight.strides[2],
                                   weight.strides[2]};
    if (suggest_format(4, in4_sizes, in4_strides) == Format::ChannelsLast ||
        suggest_format(4, w4_sizes, w4_strides) == Format::ChannelsLast) {
      // Through 4-D and back: t.unsqueeze(2).to(channels_last).squeeze(2).
      const int64_t out4_sizes[4] = {out_sizes[0], out_sizes[1], 1, out_sizes[2]};
      int64_t out4_strides[4];
      restride(4, out4_sizes, Format::ChannelsLast, out4_strides);
      out_strides[0] = out4_strides[0];
      out_strides[1] = out4_strides[1];
      out_strides[2] = out4_strides[3];
      return;
    }
  } else if (k == 4) {
    if (suggest_format(4, input.sizes, input.strides) == Format::ChannelsLast ||
        suggest_format(4, weight.sizes, weight.strides) == Format::ChannelsLast)
      format = Format::ChannelsLast;
  } else if (input.dtype != AOTIRT_DTYPE_FLOAT64 && (suggest_format(5, input.sizes, input.strides) == Format::ChannelsLast3d ||
                                  suggest_format(5, weight.sizes, weight.strides) == Format::ChannelsLast3d)) {
    format = Format::ChannelsLast3d;
  }
  restride(k, out_sizes, format, out_strides);
}

template <typename T>
void convolve(const Tensor& input, const Tensor& weight, const Tensor* bias, int64_t groups, const Geometry& g,
              const Tensor& output) {
  const T* x = static_cast<const T*>(input.data());
  const T* w = static_cast<const T*>(weight.data());
  const T* b = bias ? static_cast<const T*>(bias->data()) : nullptr;
  T* y = static_cast<T*>(output.data());
  const int64_t batch = input.sizes[0], out_channels = weight.sizes[0], group_in = weight.sizes[1];
  const int64_t group_out = out_channels / groups;
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t oc = 0; oc < out_channels; ++oc) {
      const int64_t first_in = (oc / group_out) * group_in;
      const T* wo = w + oc * weight.strides[0];
      const double start = b ? host::to_double(b[oc * bias->strides[0]]) : 0.0;
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh)
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            double acc = start;
            for (int64_t ic = 0; ic < group_in; ++ic) {
              const T* xc = x + n * input.strides[0] + (first_in + ic) * input.strides[1];
              const T* wc = wo + ic * weight.strides[1];
              for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
                const int64_t id = od * g.stride[0] - g.padding[0] + kd * g.dilation[0];
                if (id < 0 || id >= g.in[0]) continue;
                for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
                  const int64_t ih = oh * g.stride[1] - g.padding[1] + kh * g.dilation[1];
                  if (ih < 0 || ih >= g.in[1]) continue;
                  for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
                    const int64_t iw = ow * g.stride[2] - g.padding[2] + kw * g.dilation[2];
                    if (iw < 0 || iw >= g.in[2]) continue;
                    acc += host::to_double(xc[id * g.in_stride[0] + ih * g.in_stride[1] + iw * g.in_stride[2]]) *
                           host::to_double(wc[kd * g.weight_stride[0] + kh * g.weight_stride[1] +
                                              kw * g.weight_stride[2]]);
                  }
                }
              }
            }
            y[n * output.strides[0] + oc * output.strides[1] + od * g.out_stride[0] + oh * g.out_stride[1] +
              ow * g.out_stride[2]] = host::from_double<T>(acc);
          }
    }
  }
}

// The CPU convolution of a checked call: the output laid out as torch
// lays it out, then the loops.
aotirt_status convolution(conv::Problem& p, Tensor** ret) {
  const Tensor& input = *p.input;
  int64_t out_strides[5];
  output_strides(input, *p.weight, p.out_sizes, out_strides);
  Tensor* made = nullptr;
  AOTIRT_TRY(new_tensor(p.ndim, p.out_sizes, out_strides, input.dtype, AOTIRT_DEVICE_CPU, 0, &made));
  OwnedTensor output(made);
  conv::set_output_strides(out_strides, &p);
  host::dispatch_dtype(input.dtype, [&](auto element) {
    using T = decltype(element);
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>)
      convolve<T>(input, *p.weight, p.bias, p.groups, p.g, *output);
  });
  *ret = output.release();
  return AOTIRT_OK;
}

}  // namespace
}  // namespace aotirt

extern "C" AOTITorchError aoti_torch_cpu_convolution(
    AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias, const int64_t* stride,
    int64_t stride_len_, const int64_t* padding, int64_t padding_len_, const int64_t* dilation, int64_t dilation_len_,
    int32_t transposed, const int64_t* output_padding, int64_t output_padding_len_, int64_t groups,
    AtenTensorHandle* ret0) {
  (void)output_padding;  // only transposed convolutions read it
  (void)output_padding_len_;
  const char* name = aotirt::kName;
  return aotirt::shim(name, [&] {
    if (!input || !weight || !ret0) return aotirt::null_argument(name);
    aotirt::conv::Problem p;
    AOTIRT_TRY(aotirt::conv::describe(name, AOTIRT_DEVICE_CPU, input, weight, bias ? *bias : nullptr, stride,
                                      stride_len_, padding, padding_len_, dilation, dilation_len_, transposed, groups,
                                      &p));
    return aotirt::convolution(p, ret0);
  });
}
