// aten.convolution's output sizes and strides, as torch computes them, for
// the CPU and CUDA convolution shims: pure arithmetic on shapes (no tensors,
// no CUDA, no aotirt errors), checked on the host by
// tests/shims/conv_layout_check.cpp.
//
// The generated code of a model indexes a convolution's output with the
// strides torch's fake tensor had at compile time, so these must be torch's
// exactly. That fake tensor is made in two steps (torch 2.11 to 2.13):
//  1. meta_conv (torch/_meta_registrations.py): new_empty(sizes), then
//     .to(memory_format=pick_memory_format()): on CUDA channels-last when the
//     input or the weight is channels-last by the Python rule
//     (torch._prims_common.suggest_memory_format == torch.channels_last,
//     so 4-D only); on the CPU when the input is.
//  2. fake_impls.conv (torch/_subclasses/fake_impls.py): .to() the memory
//     format of the backend torch would pick (_select_conv_backend, then
//     _conv_determine_backend_memory_format); 1-D convolutions decide it as
//     2-D ones, over input.contiguous().unsqueeze(2) and weight.unsqueeze(2),
//     and go through 4-D and back (unsqueeze(2).to(channels_last).squeeze(2)).
// `t.to(memory_format=f)` keeps t when c10's suggest_memory_format(t) is
// already f, else gives the dense strides of f.
#pragma once

#include <cstdint>
#include <string>

namespace aotirt {
namespace conv_layout {

enum class Format { Contiguous, ChannelsLast, ChannelsLast3d };

// Do 4-D (5-D) strides walk C, W, H, (D,) N, i.e. look channels-last?
// c10's is_channels_last_strides_2d_s4 / _3d_s5 (c10/core/MemoryFormat.h)
// and torch._prims_common.are_strides_like_channels_last differ in one
// place: the running minimum grows by a dimension's size when that size
// (c10) or that dimension's stride (Python) is above 1.
inline bool strides_like_channels_last(int64_t ndim, const int64_t* sizes, const int64_t* strides, bool python) {
  static constexpr int kOrder4[] = {1, 3, 2, 0};
  static constexpr int kOrder5[] = {1, 4, 3, 2, 0};
  if (ndim != 4 && ndim != 5) return false;
  const int* order = ndim == 4 ? kOrder4 : kOrder5;
  if (strides[1] == 0) return false;  // a trivial channel dimension: contiguous by default
  int64_t min = 0;
  for (int64_t i = 0; i < ndim; ++i) {
    const int d = order[i];
    if (sizes[d] == 0) return false;
    if (strides[d] < min) return false;
    if (d == 0 && min == strides[1]) return false;  // ambiguous N111 layouts count as contiguous
    min = strides[d];
    if ((python ? strides[d] : sizes[d]) > 1) min *= sizes[d];
  }
  return true;
}

// Tensor.suggest_memory_format() (c10) or torch._prims_common's (python).
inline Format suggest(int64_t ndim, const int64_t* sizes, const int64_t* strides, bool python = false) {
  if (!strides_like_channels_last(ndim, sizes, strides, python)) return Format::Contiguous;
  return ndim == 4 ? Format::ChannelsLast : Format::ChannelsLast3d;
}

// The dense strides of `format` for `sizes` (torch's empty(..., memory_format=)):
// contiguous counts size-0 dimensions as 1, channels-last does not.
inline void format_strides(int64_t ndim, const int64_t* sizes, Format format, int64_t* strides) {
  if (format == Format::Contiguous || (ndim != 4 && ndim != 5)) {
    int64_t step = 1;
    for (int64_t d = ndim - 1; d >= 0; --d) {
      strides[d] = step;
      step *= sizes[d] > 1 ? sizes[d] : 1;
    }
    return;
  }
  strides[1] = 1;
  strides[ndim - 1] = sizes[1];
  for (int64_t d = ndim - 2; d >= 2; --d) strides[d] = strides[d + 1] * sizes[d + 1];
  strides[0] = strides[2] * sizes[2];
}

// t.to(memory_format=format), in place on t's strides.
inline void to_format(int64_t ndim, const int64_t* sizes, int64_t* strides, Format format) {
  if (suggest(ndim, sizes, strides) != format) format_strides(ndim, sizes, format, strides);
}

// t.unsqueeze(2) of a 3-D [N, C, L] view: the new dimension's stride is
// L's size times its stride.
inline void unsqueeze2(const int64_t* sizes, const int64_t* strides, int64_t* sizes4, int64_t* strides4) {
  const int64_t s[4] = {sizes[0], sizes[1], 1, sizes[2]};
  const int64_t st[4] = {strides[0], strides[1], sizes[2] * strides[2], strides[2]};
  for (int d = 0; d < 4; ++d) {
    sizes4[d] = s[d];
    strides4[d] = st[d];
  }
}

// The memory format of the backend torch picks, for a call whose input and
// weight have `k` dimensions. The 1-D case looks at
// input.contiguous().unsqueeze(2) and weight.unsqueeze(2).
//  - CUDA (cuDNN; and the depthwise kernels, which torch leaves to cuDNN
//    whenever the layout is channels-last): cudnn_conv_suggest_memory_format,
//    channels-last(-3d) when the input or the weight is, never for float64.
//  - CPU (mkldnn and thnn for 2-D, mkldnn alone for 3-D): channels-last when
//    the input or the weight is, 3-D never for float64 (mkldnn takes none).
// Empty inputs (no batch or no channels) go to torch's Empty backend: contiguous.
inline Format backend_format(bool cuda, int64_t k, const int64_t* in_sizes, const int64_t* in_strides,
                             const int64_t* w_sizes, const int64_t* w_strides, bool float64) {
  if (in_sizes[0] == 0 || in_sizes[1] == 0) return Format::Contiguous;
  if (k == 3) {
    int64_t in3[3], in4_sizes[4], in4_strides[4], w4_sizes[4], w4_strides[4];
    format_strides(3, in_sizes, Format::Contiguous, in3);
    unsqueeze2(in_sizes, in3, in4_sizes, in4_strides);
    unsqueeze2(w_sizes, w_strides, w4_sizes, w4_strides);
    if (cuda && float64) return Format::Contiguous;
    const bool cl = suggest(4, in4_sizes, in4_strides) == Format::ChannelsLast ||
                    suggest(4, w4_sizes, w4_strides) == Format::ChannelsLast;
    return cl ? Format::ChannelsLast : Format::Contiguous;
  }
  const Format wanted = k == 4 ? Format::ChannelsLast : Format::ChannelsLast3d;
  if (float64 && (cuda || k == 5)) return Format::Contiguous;
  const bool like = suggest(k, in_sizes, in_strides) == wanted || suggest(k, w_sizes, w_strides) == wanted;
  return like ? wanted : Format::Contiguous;
}

// The output's strides for `out_sizes` (steps 1 and 2 above); `backend`
// (may be null) receives the backend's memory format, the layout the CUDA
// shim hands cuDNN its operands in.
inline void output_strides(bool cuda, int64_t k, const int64_t* in_sizes, const int64_t* in_strides,
                           const int64_t* w_sizes, const int64_t* w_strides, const int64_t* out_sizes,
                           bool float64, int64_t* out_strides, Format* backend = nullptr) {
  // 1. meta_conv. Its other outcome, .to(contiguous_format) or no change,
  //    leaves new_empty's contiguous strides as they are.
  format_strides(k, out_sizes, Format::Contiguous, out_strides);
  const bool meta_channels_last =
      k == 4 && (suggest(4, in_sizes, in_strides, true) == Format::ChannelsLast ||
                 (cuda && suggest(4, w_sizes, w_strides, true) == Format::ChannelsLast));
  if (meta_channels_last) to_format(4, out_sizes, out_strides, Format::ChannelsLast);
  // 2. fake_impls.conv.
  const Format format = backend_format(cuda, k, in_sizes, in_strides, w_sizes, w_strides, float64);
  if (backend) *backend = format;
  if (k == 3 && format == Format::ChannelsLast) {
    int64_t sizes4[4], strides4[4];
    unsqueeze2(out_sizes, out_strides, sizes4, strides4);
    to_format(4, sizes4, strides4, Format::ChannelsLast);
    out_strides[0] = strides4[0];
    out_strides[1] = strides4[1];
    out_strides[2] = strides4[3];
    return;
  }
  to_format(k, out_sizes, out_strides, format);
}

// The geometry of one call, checked as torch's check_shape_forward checks
// it, with the output's sizes (meta's calc_conv_nd_return_shape).
struct Geometry {
  int64_t k = 0;        // dimensions of input, weight and output: 3, 4 or 5
  int64_t spatial = 0;  // k - 2
  int64_t stride[3] = {}, padding[3] = {}, dilation[3] = {}, output_padding[3] = {};
  int64_t groups = 1;
  bool transposed = false;
  int64_t out_sizes[5] = {};
};

// One value for every spatial dimension, or one for all of them.
inline std::string expand(const char* what, const int64_t* values, int64_t len, int64_t spatial, int64_t* out) {
  if (len != 1 && len != spatial)
    return std::string(what) + " has " + std::to_string(len) + " values; the convolution has " +
           std::to_string(spatial) + " spatial dimensions";
  if (!values) return std::string(what) + " is NULL";
  for (int64_t d = 0; d < spatial; ++d) out[d] = values[len == 1 ? 0 : d];
  return "";
}

// Checks the ranks, channels, groups, bias and parameters of a call and
// fills `g`; returns "" or what is wrong (naming the argument and its value).
// `bias_sizes` is null without a bias. `output_padding` is read only when
// `transposed`.
inline std::string describe(int64_t in_ndim, const int64_t* in, int64_t w_ndim, const int64_t* w,
                            int64_t bias_ndim, const int64_t* bias_sizes, const int64_t* stride,
                            int64_t stride_len, const int64_t* padding, int64_t padding_len,
                            const int64_t* dilation, int64_t dilation_len, bool transposed,
                            const int64_t* output_padding, int64_t output_padding_len, int64_t groups,
                            Geometry* g) {
  const int64_t k = w_ndim;
  if (k < 3 || k > 5)
    return "the weight must have 3, 4 or 5 dimensions (1-, 2- or 3-D convolution), got " + std::to_string(k);
  if (in_ndim != k)
    return "the input must have the weight's " + std::to_string(k) + " dimensions [batch, channels, ...], got " +
           std::to_string(in_ndim);
  if (groups < 1) return "groups must be positive, got " + std::to_string(groups);
  g->k = k;
  g->spatial = k - 2;
  g->groups = groups;
  g->transposed = transposed;
  // Not transposed: weight [out, in / groups, ...]. Transposed: weight
  // [in, out / groups, ...], and the output has out channels.
  const int64_t out_channels = transposed ? w[1] * groups : w[0];
  if (w[0] % groups != 0)
    return "the weight's " + std::to_string(w[0]) + (transposed ? " input" : " output") +
           " channels do not split into " + std::to_string(groups) + " groups";
  if (!transposed && in[1] != w[1] * groups)
    return "the input has " + std::to_string(in[1]) + " channels; the weight expects " + std::to_string(w[1]) +
           " per group times " + std::to_string(groups) + " groups";
  if (transposed && in[1] != w[0])
    return "the input has " + std::to_string(in[1]) + " channels; the weight of a transposed convolution " +
           "expects weight.size(0) = " + std::to_string(w[0]);
  if (bias_sizes && (bias_ndim != 1 || bias_sizes[0] != out_channels))
    return "the bias must have one value per output channel (" + std::to_string(out_channels) + ")";
  std::string bad = expand("stride", stride, stride_len, g->spatial, g->stride);
  if (bad.empty()) bad = expand("padding", padding, padding_len, g->spatial, g->padding);
  if (bad.empty()) bad = expand("dilation", dilation, dilation_len, g->spatial, g->dilation);
  if (bad.empty() && transposed)
    bad = expand("output_padding", output_padding, output_padding_len, g->spatial, g->output_padding);
  if (!bad.empty()) return bad;

  g->out_sizes[0] = in[0];
  g->out_sizes[1] = in[1] == 0 ? 0 : out_channels;  // torch: no input channels, no output channels
  for (int64_t d = 0; d < g->spatial; ++d) {
    const int64_t s = g->stride[d], p = g->padding[d], dl = g->dilation[d], op = g->output_padding[d];
    if (s < 1 || dl < 1 || p < 0 || op < 0)
      return "strides and dilations must be positive and paddings non-negative (spatial dimension " +
             std::to_string(d) + ": stride " + std::to_string(s) + ", dilation " + std::to_string(dl) +
             ", padding " + std::to_string(p) + (transposed ? ", output_padding " + std::to_string(op) : "") + ")";
    const int64_t size = in[2 + d], span = dl * (w[2 + d] - 1) + 1;
    if (transposed) {
      if (op >= s && op >= dl)
        return "output_padding " + std::to_string(op) + " in spatial dimension " + std::to_string(d) +
               " must be smaller than the stride (" + std::to_string(s) + ") or the dilation (" +
               std::to_string(dl) + ")";
      const int64_t out = (size - 1) * s - 2 * p + span + op;
      if (out < 1)
        return "spatial dimension " + std::to_string(d) + " of the output would be " + std::to_string(out) +
               " (input " + std::to_string(size) + ", stride " + std::to_string(s) + ", padding " +
               std::to_string(p) + ", dilated kernel " + std::to_string(span) + ")";
      g->out_sizes[2 + d] = out;
      continue;
    }
    const int64_t padded = size + 2 * p;
    if (padded < span)
      return "spatial dimension " + std::to_string(d) + " is too small: " + std::to_string(size) + " padded by " +
             std::to_string(p) + " on each side is shorter than the dilated kernel (" + std::to_string(span) + ")";
    g->out_sizes[2 + d] = (padded - span) / s + 1;
  }
  return "";
}

// A convolution that is one matrix product as it lies in memory: 2-D, not
// transposed, a 1x1 kernel, stride 1, no padding, one group, and input,
// weight and output dense channels-last ([N, C, H, W] stored [N, H, W, C],
// the layout Inductor hands CUDA convolutions). Then the output's
// [N*H*W, K] rows are the input's [N*H*W, C] rows times the weight's [K, C]
// transposed, all three row-major in place (a [K, C, 1, 1] weight is [K, C]
// row-major in either layout). A tuned run measures cuBLAS's GEMM for these
// beside cuDNN's engines (conv_gemm.h). (A dimension of size 1 may have any
// stride: it addresses the same memory.)
struct MatmulShape {
  int64_t rows = 0, inner = 0, cols = 0;  // N*H*W, C, K
};
inline bool as_matmul(int64_t ndim, const int64_t* x_sizes, const int64_t* x_strides, const int64_t* w_sizes,
                      const int64_t* w_strides, const int64_t* y_sizes, const int64_t* y_strides,
                      const int64_t* stride, const int64_t* padding, bool transposed, MatmulShape* out) {
  if (ndim != 4 || transposed || w_sizes[2] != 1 || w_sizes[3] != 1 || w_sizes[1] != x_sizes[1]) return false;
  if (stride[0] != 1 || stride[1] != 1 || padding[0] != 0 || padding[1] != 0) return false;
  if (y_sizes[0] != x_sizes[0] || y_sizes[1] != w_sizes[0] || y_sizes[2] != x_sizes[2] || y_sizes[3] != x_sizes[3])
    return false;
  auto dense_channels_last = [](const int64_t* sizes, const int64_t* strides) {
    int64_t want[4];
    format_strides(4, sizes, Format::ChannelsLast, want);
    for (int d = 0; d < 4; ++d)
      if (sizes[d] > 1 && strides[d] != want[d]) return false;
    return true;
  };
  if (!dense_channels_last(x_sizes, x_strides) || !dense_channels_last(w_sizes, w_strides) ||
      !dense_channels_last(y_sizes, y_strides))
    return false;
  *out = MatmulShape{x_sizes[0] * x_sizes[2] * x_sizes[3], x_sizes[1], w_sizes[0]};
  return true;
}

}  // namespace conv_layout
}  // namespace aotirt
