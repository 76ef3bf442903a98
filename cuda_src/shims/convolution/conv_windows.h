// im2col's gather in one pass (conv_view.h's Im2col): each element of the
// dense [N*Ho*Wo, K] window matrix read from the input as it lies, or zero
// where its window reaches into the padding. It replaces three launches on
// a padded convolution (zeroing a padded copy, copying the input into it,
// the strided gather) with one; unpadded, it is the gather alone.
//
// Why a kernel of aotirt's own: cuDNN's graph API has no im2col (the
// legacy cudnnIm2Col is not part of it), cuBLAS takes dense matrices only,
// and CUB/Thrust have no windows.
//
// The index arithmetic is here, host and device code in 32 bits (the
// strided copies' dividers, runtime/strided_index.h), so that
// tests/shims/conv_view_check.cpp checks it on the host element by element
// against the padded copy and gather it replaces.
#pragma once

#include <cstddef>
#include <cstdint>

#include "aotirt/aotirt.h"
#include "runtime/strided_index.h"
#include "shims/convolution/conv_view.h"

struct CUstream_st;  // cudaStream_t's struct: the declaration below needs no CUDA headers

namespace aotirt {
namespace conv_cuda {

struct WindowIndex {
  // A matrix index is (row, col); a row is (n, ho, wo); a col is (c, i, j)
  // for a contiguous weight, (i, j, c) for a channels-last one (Im2col's
  // order), decomposed as col = (a * mid + b) * last + e.
  strided::Divider inner;        // K, the columns
  strided::Divider out_w, out_h;  // Wo, Ho
  strided::Divider last, mid;     // the col's innermost two sizes: (kw, kh) or (c, kw)
  bool channels_inner = false;    // (i, j, c)
  int32_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1, height = 0, width = 0;
  uint32_t x_n = 0, x_c = 0, x_h = 0, x_w = 0;  // the input's strides, in elements
  uint32_t count = 0;                           // elements of the matrix

  // The offset in the input of matrix element `index` (< count), or false
  // where it lies in the padding (the element is zero).
  AOTIRT_STRIDED_HD bool source(uint32_t index, uint32_t* offset) const {
    const uint32_t row = inner.quotient(index), col = index - row * inner.divisor;
    const uint32_t rest = out_w.quotient(row), wo = row - rest * out_w.divisor;
    const uint32_t n = out_h.quotient(rest), ho = rest - n * out_h.divisor;
    const uint32_t ab = last.quotient(col), e = col - ab * last.divisor;
    const uint32_t a = mid.quotient(ab), b = ab - a * mid.divisor;
    // (c, i, j) = (a, b, e) for a contiguous weight, (i, j, c) = (a, b, e) for a channels-last one.
    const uint32_t c = channels_inner ? e : a, i = channels_inner ? a : b, j = channels_inner ? b : e;
    const int32_t h = static_cast<int32_t>(ho) * stride_h - pad_h + static_cast<int32_t>(i) * dilation_h;
    const int32_t w = static_cast<int32_t>(wo) * stride_w - pad_w + static_cast<int32_t>(j) * dilation_w;
    if (h < 0 || h >= height || w < 0 || w >= width) return false;
    *offset = n * x_n + c * x_c + static_cast<uint32_t>(h) * x_h + static_cast<uint32_t>(w) * x_w;
    return true;
  }
};

// The one-pass gather of im2col_of(s, ...)'s `u`, where 32 bits address it:
// the matrix's elements and every offset of the input under 2^31, every
// coordinate of the windows too. False otherwise (the padded copy and
// strided gather then do it).
inline bool window_index_of(const Spec& s, const Im2col& u, WindowIndex* out) {
  constexpr int64_t kMost = INT32_MAX;
  const int64_t c = s.x.sizes[1], h = s.x.sizes[2], w = s.x.sizes[3];
  const int64_t kh = s.w.sizes[2], kw = s.w.sizes[3], ho = s.y.sizes[2], wo = s.y.sizes[3];
  if (u.product.rows <= 0 || u.product.inner <= 0 || u.product.rows > kMost / u.product.inner) return false;
  int64_t reach = 0;
  for (int d = 0; d < 4; ++d) {
    if (s.x.strides[d] < 0 || s.x.strides[d] > kMost) return false;
    reach += (s.x.sizes[d] - 1) * s.x.strides[d];
  }
  if (reach > kMost) return false;
  // The furthest coordinate a window reaches, before the bounds test.
  if (ho * s.stride[0] + kh * s.dilation[0] + s.padding[0] > kMost ||
      wo * s.stride[1] + kw * s.dilation[1] + s.padding[1] > kMost)
    return false;
  WindowIndex x;
  x.channels_inner = u.channels_inner;
  x.inner = strided::Divider::of(static_cast<uint32_t>(u.product.inner));
  x.out_w = strided::Divider::of(static_cast<uint32_t>(wo));
  x.out_h = strided::Divider::of(static_cast<uint32_t>(ho));
  x.last = strided::Divider::of(static_cast<uint32_t>(x.channels_inner ? c : kw));
  x.mid = strided::Divider::of(static_cast<uint32_t>(x.channels_inner ? kw : kh));
  x.stride_h = static_cast<int32_t>(s.stride[0]), x.stride_w = static_cast<int32_t>(s.stride[1]);
  x.pad_h = static_cast<int32_t>(s.padding[0]), x.pad_w = static_cast<int32_t>(s.padding[1]);
  x.dilation_h = static_cast<int32_t>(s.dilation[0]), x.dilation_w = static_cast<int32_t>(s.dilation[1]);
  x.height = static_cast<int32_t>(h), x.width = static_cast<int32_t>(w);
  x.x_n = static_cast<uint32_t>(s.x.strides[0]), x.x_c = static_cast<uint32_t>(s.x.strides[1]);
  x.x_h = static_cast<uint32_t>(s.x.strides[2]), x.x_w = static_cast<uint32_t>(s.x.strides[3]);
  x.count = static_cast<uint32_t>(u.product.rows * u.product.inner);
  *out = x;
  return true;
}

// `index` moving `width` elements as one word: its matrix and input seen
// as arrays of `width`-element words. It applies where a window's elements
// run channels innermost (a channels-last weight) and the input's channels
// lie contiguous, `width` dividing their count and every input stride:
// then `width` consecutive matrix elements are `width` consecutive
// channels of one input pixel, all in the padding or none, and the word
// that holds them starts on a multiple of `width`. False elsewhere.
//
// Why: one element a thread, the gather moved 12.7 MB a round of four of
// resnet18's layers at 0.7 TB/s on an H100, as long as cuBLAS's products
// after it took (bench/runs/s29-h100-check.md); a 16-byte word a thread
// moves the same bytes with a quarter or an eighth of the threads and
// their index arithmetic.
inline bool widen_window_index(const WindowIndex& index, uint32_t width, WindowIndex* out) {
  if (width < 2 || !index.channels_inner || index.x_c != 1) return false;
  const uint32_t channels = index.last.divisor;
  if (channels % width != 0 || index.x_n % width != 0 || index.x_h % width != 0 || index.x_w % width != 0)
    return false;
  WindowIndex wide = index;
  wide.inner = strided::Divider::of(index.inner.divisor / width);  // K = kh * kw * C: C divides it
  wide.last = strided::Divider::of(channels / width);
  wide.x_n = index.x_n / width, wide.x_h = index.x_h / width, wide.x_w = index.x_w / width;
  wide.count = index.count / width;
  *out = wide;
  return true;
}

// Queues the gather of `index` from the input's data `x` into `matrix`
// (dense, index.count elements of `itemsize` bytes: 2 or 4) on `stream`
// (a cudaStream_t), ordered after x's producer; in the widest words of up
// to 16 bytes that widen_window_index allows and both pointers' alignment
// takes. conv_windows.cu.
aotirt_status gather_windows(const WindowIndex& index, const void* x, void* matrix, size_t itemsize,
                             CUstream_st* stream);

}  // namespace conv_cuda
}  // namespace aotirt
