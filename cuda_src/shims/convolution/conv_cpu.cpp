// aoti_torch_cpu_convolution: aten.convolution on the CPU, for 1-, 2- and
// 3-D convolutions (groups, stride, padding, dilation), not transposed.
// Plain loops, accumulating in double whatever the element type.
//
// The output is laid out as torch lays it out (its fake-tensor rule for
// convolution, which the model's generated code was compiled against; see
// conv_layout.h): channels-last when the input or the weight is
// channels-last, else contiguous. Inductor does make CPU convolutions
// channels-last.

#include <string>
#include <type_traits>

#include "aotirt/shim.h"
#include "runtime/dtypes.h"
#include "runtime/errors.h"
#include "runtime/tensor.h"
#include "shims/convolution/conv_entry.h"
#include "shims/convolution/conv_layout.h"
#include "shims/host_elements.h"
#include "shims/shim_helpers.h"

namespace aotirt {
namespace {

constexpr const char* kName = "aoti_torch_cpu_convolution";

aotirt_status bad(const std::string& what) { return fail(AOTIRT_ERROR_VALUE, std::string(kName) + ": " + what); }

// One spatial geometry, padded to 3 dimensions (depth, height, width) with
// size-1 dimensions in front for 1- and 2-D convolutions.
struct Geometry {
  int64_t in[3], kernel[3], out[3], stride[3], padding[3], dilation[3];
  int64_t in_stride[3], weight_stride[3], out_stride[3];
};

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

aotirt_status convolution(const ConvolutionArgs& a, Tensor** ret) {
  const Tensor *input = a.input, *weight = a.weight, *bias = a.bias;
  const bool transposed = a.transposed;
  if (!input || !weight || !ret) return null_argument(kName);
  if (transposed)
    return bad("transposed convolutions are not supported (aotirt implements aten.convolution with "
               "transposed=False only)");
  AOTIRT_TRY(host::require_cpu(*input, kName, "input"));
  AOTIRT_TRY(host::require_cpu(*weight, kName, "weight"));
  if (bias) AOTIRT_TRY(host::require_cpu(*bias, kName, "bias"));
  if (!is_floating(input->dtype))
    return fail(AOTIRT_ERROR_TYPE, std::string(kName) + ": " + dtype_name(input->dtype) +
                                       " inputs are not supported (float32, float64, float16, bfloat16)");
  if (weight->dtype != input->dtype || (bias && bias->dtype != input->dtype))
    return fail(AOTIRT_ERROR_TYPE, std::string(kName) + ": input, weight and bias must have one dtype");
  conv_layout::Geometry shape;
  const std::string wrong = conv_layout::describe(
      input->ndim, input->sizes, weight->ndim, weight->sizes, bias ? bias->ndim : 0, bias ? bias->sizes : nullptr,
      a.stride, a.stride_len, a.padding, a.padding_len, a.dilation, a.dilation_len, false, nullptr, 0, a.groups,
      &shape);
  if (!wrong.empty()) return bad(wrong);
  const int64_t k = shape.k, spatial = shape.spatial;
  int64_t out_strides[5];
  conv_layout::output_strides(false, k, input->sizes, input->strides, weight->sizes, weight->strides,
                              shape.out_sizes, input->dtype == AOTIRT_DTYPE_FLOAT64, out_strides);
  Geometry g;
  for (int64_t i = 0; i < 3; ++i) {
    // Spatial dimension i of 3; the first 3 - spatial are the padding ones.
    const int64_t d = i - (3 - spatial);
    const bool real = d >= 0;
    g.in[i] = real ? input->sizes[2 + d] : 1;
    g.kernel[i] = real ? weight->sizes[2 + d] : 1;
    g.out[i] = real ? shape.out_sizes[2 + d] : 1;
    g.stride[i] = real ? shape.stride[d] : 1;
    g.padding[i] = real ? shape.padding[d] : 0;
    g.dilation[i] = real ? shape.dilation[d] : 1;
    g.in_stride[i] = real ? input->strides[2 + d] : 0;
    g.weight_stride[i] = real ? weight->strides[2 + d] : 0;
    g.out_stride[i] = real ? out_strides[2 + d] : 0;
  }
  Tensor* made = nullptr;
  AOTIRT_TRY(new_tensor(k, shape.out_sizes, out_strides, input->dtype, AOTIRT_DEVICE_CPU, 0, &made));
  OwnedTensor output(made);
  host::dispatch_dtype(input->dtype, [&](auto element) {
    using T = decltype(element);
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>)
      convolve<T>(*input, *weight, bias, a.groups, g, *output);
  });
  *ret = output.release();
  return AOTIRT_OK;
}

}  // namespace
}  // namespace aotirt

AOTIRT_DEFINE_CONVOLUTION_SHIM(aoti_torch_cpu_convolution, aotirt::convolution)
