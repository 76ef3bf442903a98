// A CUDA convolution as cuDNN sees it (its operands' views, what a plan
// depends on), and the same convolution as the tuning's alternative ways of
// running it see it (conv_alternatives.h): pure arithmetic on shapes (no
// tensors, no CUDA), checked on the host by tests/shims/conv_view_check.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "shims/convolution/conv_layout.h"

namespace aotirt {
namespace conv_cuda {

// An operand as cuDNN sees it: 4- or 5-D (a 1-D convolution's [N, C, L]
// becomes [N, C, 1, L], as torch's unsqueeze(2) makes it).
struct View {
  int64_t ndim = 0;
  int64_t sizes[5] = {};
  int64_t strides[5] = {};
};

// Everything a plan depends on, as cuDNN sees it.
struct Spec {
  bool transposed = false;
  int32_t dtype = 6;
  bool tf32 = false;
  View x, w, y;  // input, weight, output (the data gradient's dy, w, dx when transposed)
  int64_t spatial = 0;  // of the views: 2 or 3
  int64_t stride[3] = {}, padding[3] = {}, dilation[3] = {};
};

// The dense strides of `format` for v's sizes, and whether v already has them
// (a dimension of size 1 may have any stride: it addresses the same memory).
inline bool packed_as(const View& v, conv_layout::Format format, int64_t* strides) {
  conv_layout::format_strides(v.ndim, v.sizes, format, strides);
  for (int64_t d = 0; d < v.ndim; ++d)
    if (v.sizes[d] > 1 && v.strides[d] != strides[d]) return false;
  return true;
}

// `s` with every operand channels-last, for one whose operands are all
// contiguous (a 1-D convolution, which Inductor leaves so) and where the
// two layouts differ for some operand; false for any other.
inline bool channels_last_spec(const Spec& s, Spec* cl) {
  const conv_layout::Format format =
      s.x.ndim == 4 ? conv_layout::Format::ChannelsLast : conv_layout::Format::ChannelsLast3d;
  int64_t packed[5];
  if (!packed_as(s.x, conv_layout::Format::Contiguous, packed) ||
      !packed_as(s.w, conv_layout::Format::Contiguous, packed) ||
      !packed_as(s.y, conv_layout::Format::Contiguous, packed))
    return false;
  *cl = s;
  bool moved = false;
  for (View* v : {&cl->x, &cl->w, &cl->y}) {
    int64_t before[5];
    std::memcpy(before, v->strides, sizeof(before));
    conv_layout::format_strides(v->ndim, v->sizes, format, v->strides);
    for (int64_t d = 0; d < v->ndim; ++d) moved = moved || (v->sizes[d] > 1 && v->strides[d] != before[d]);
  }
  return moved;
}

// The tuning's cublas_im2col alternative: a single-group 2-D convolution
// (a 1-D one as its [N, C, 1, L] view) as one matrix product, as im2col
// makes it. The input, zero-padded into scratch where the convolution pads
// (`padded`: dense, in the input's layout), has its windows gathered by one
// strided copy (the view `gather` names: N, Ho, Wo, then a window's K
// elements) into a dense [N*Ho*Wo, K] matrix, and that times the weight as
// it lies, a dense [O, K] matrix, is the output as a dense channels-last
// [N*Ho*Wo, O]. A window's K elements run in the order the weight lies:
// (c, i, j) for a contiguous weight, (i, j, c) for a channels-last one. A
// contiguous output is instead per image the weight times that image's
// windows transposed, [O, Ho*Wo]; an output in neither layout is not taken
// (the shim hands every operand in one of them). Which convolutions offer
// it is conv_alternatives.cpp's choice.
struct Im2col {
  enum class Output { kChannelsLast, kContiguous };
  bool padded = false;  // the input is copied into a zeroed [N, C, Hp, Wp] first
  int64_t padded_sizes[4] = {}, padded_strides[4] = {};  // [N, C, H + 2ph, W + 2pw] where padded
  int64_t gather_sizes[6] = {}, gather_strides[6] = {};  // a view of the padded copy, else of the input
  conv_layout::MatmulShape product;                      // rows N*Ho*Wo, inner K = C*kh*kw, cols O
  Output output = Output::kChannelsLast;
  bool channels_inner = false;  // a window's elements in (i, j, c) order (a channels-last weight), else (c, i, j)
};

inline bool im2col_of(const Spec& s, Im2col* out) {
  if (s.transposed || s.x.ndim != 4 || s.w.ndim != 4 || s.y.ndim != 4) return false;
  const int64_t n = s.x.sizes[0], c = s.x.sizes[1], h = s.x.sizes[2], w = s.x.sizes[3];
  const int64_t o = s.w.sizes[0], kh = s.w.sizes[2], kw = s.w.sizes[3];
  if (s.w.sizes[1] != c || n < 1 || c < 1 || o < 1 || kh < 1 || kw < 1) return false;
  for (int d = 0; d < 2; ++d)
    if (s.stride[d] < 1 || s.padding[d] < 0 || s.dilation[d] < 1) return false;
  const int64_t hp = h + 2 * s.padding[0], wp = w + 2 * s.padding[1];
  const int64_t reach_h = s.dilation[0] * (kh - 1) + 1, reach_w = s.dilation[1] * (kw - 1) + 1;
  if (hp < reach_h || wp < reach_w) return false;
  const int64_t ho = (hp - reach_h) / s.stride[0] + 1, wo = (wp - reach_w) / s.stride[1] + 1;
  if (s.y.sizes[0] != n || s.y.sizes[1] != o || s.y.sizes[2] != ho || s.y.sizes[3] != wo) return false;
  int64_t packed[5];
  // Where both hold (one channel, or a 1x1 kernel), both orders are the same memory.
  const bool weight_contiguous = packed_as(s.w, conv_layout::Format::Contiguous, packed);
  if (!weight_contiguous && !packed_as(s.w, conv_layout::Format::ChannelsLast, packed)) return false;
  Im2col u;
  if (packed_as(s.y, conv_layout::Format::ChannelsLast, packed))
    u.output = Im2col::Output::kChannelsLast;
  else if (packed_as(s.y, conv_layout::Format::Contiguous, packed))
    u.output = Im2col::Output::kContiguous;
  else
    return false;
  u.padded = s.padding[0] != 0 || s.padding[1] != 0;
  int64_t from[4];  // the strides of what the windows are gathered from: N, C, H, W
  if (u.padded) {  // a dense copy in the input's layout, so that the gather reads it in order
    const bool last = packed_as(s.x, conv_layout::Format::ChannelsLast, packed);
    const int64_t sizes[4] = {n, c, hp, wp};
    const int64_t strides[4] = {c * hp * wp, last ? 1 : hp * wp, last ? wp * c : wp, last ? c : 1};
    std::memcpy(u.padded_sizes, sizes, sizeof(sizes));
    std::memcpy(u.padded_strides, strides, sizeof(strides));
    std::memcpy(from, strides, sizeof(from));
  } else {
    std::memcpy(from, s.x.strides, sizeof(from));
  }
  const int64_t step_h = s.stride[0] * from[2], step_w = s.stride[1] * from[3];
  const int64_t in_h = s.dilation[0] * from[2], in_w = s.dilation[1] * from[3];
  const int64_t sizes_cij[6] = {n, ho, wo, c, kh, kw}, strides_cij[6] = {from[0], step_h, step_w, from[1], in_h, in_w};
  const int64_t sizes_ijc[6] = {n, ho, wo, kh, kw, c}, strides_ijc[6] = {from[0], step_h, step_w, in_h, in_w, from[1]};
  std::memcpy(u.gather_sizes, weight_contiguous ? sizes_cij : sizes_ijc, sizeof(u.gather_sizes));
  std::memcpy(u.gather_strides, weight_contiguous ? strides_cij : strides_ijc, sizeof(u.gather_strides));
  u.channels_inner = !weight_contiguous;
  u.product = conv_layout::MatmulShape{n * ho * wo, c * kh * kw, o};
  *out = u;
  return true;
}

// The most scratch the window matrix of a convolution im2col_suits offers
// for its small product may take. Past it, the gather moves more memory
// than the product saves (im2col copies each input element kh*kw times),
// and the scratch would crowd the pool for nothing.
constexpr int64_t kIm2colMostBytes = int64_t{64} << 20;

// Whether the tuning offers `s` (im2col_of gave `u`) im2col beside cuDNN's
// engines, elements of `itemsize` bytes. In torch alone on an H100
// (bench/runs/s21-h100-tuning.md), im2col and one product beat cuDNN by
// far on a patch embedding (kernel = stride, unpadded: ViT-B/16's, 9
// against 58 us) and a 1-D convolution (Whisper's front end: 18 and 26
// against 20 and 37 us). Stems of few input channels (fewer than fill 16
// bytes a pixel: an RGB image), where cuDNN runs ten times slower than the
// arithmetic and memory traffic need, take it too. And so does any
// channels-last convolution (Inductor's layout) whose window matrix is
// small: at a small batch, resnet's 3x3 layers are products of few rows and
// a long inner dimension (2x512x7x7: 98 rows, 4,608 deep, 512 columns),
// which cuDNN runs at a tenth of the GPU's memory bandwidth on every engine
// it lists (15 us for 9.4 MB of weights), where cuBLAS splits the inner
// dimension over the whole GPU (torch.mm of that product: 9.9 us against
// F.conv2d's 14.0 on an H100). The gather in front decides it: on the
// H100 im2col won on that layer in 16 bits and lost on every float32
// layer of resnet18 with a gather of one element a thread
// (bench/runs/s29-h100-check.md). Which is faster is measured, never
// assumed.
inline bool im2col_suits(const Spec& s, const Im2col& u, int64_t itemsize) {
  const int64_t kh = s.w.sizes[2], kw = s.w.sizes[3];
  const bool patches = !u.padded && s.stride[0] == kh && s.stride[1] == kw && s.dilation[0] == 1 &&
                       s.dilation[1] == 1 && kh * kw > 1;
  const bool one_d = s.x.sizes[2] == 1 && kh == 1;
  const bool few_channels = s.x.sizes[1] * itemsize < 16;
  int64_t packed[5];
  const bool small_channels_last =
      packed_as(s.x, conv_layout::Format::ChannelsLast, packed) && u.output == Im2col::Output::kChannelsLast &&
      itemsize > 0 && u.product.rows <= kIm2colMostBytes / itemsize / u.product.inner;
  return patches || one_d || few_channels || small_channels_last;
}

}  // namespace conv_cuda
}  // namespace aotirt
