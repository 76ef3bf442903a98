// Host-only check of cuda_src/shims/convolution/conv_view.h and
// conv_windows.h (built and run by tests/shims/test_conv_view.py; no GPU, no
// cuDNN): which convolutions the tuning's channels-last and im2col
// alternatives take, and the views they run the same convolution on
// (im2col's checked against a direct convolution, on the host, and its
// one-pass gather against the padded copy and strided gather).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "host_check.h"
#include "shims/convolution/conv_view.h"
#include "shims/convolution/conv_windows.h"

namespace cc = aotirt::conv_cuda;
namespace cl = aotirt::conv_layout;
using Dims = std::vector<int64_t>;

namespace {

using host_check::expect;

cc::View view(const Dims& sizes, cl::Format format) {
  cc::View v;
  v.ndim = static_cast<int64_t>(sizes.size());
  for (int64_t d = 0; d < v.ndim; ++d) v.sizes[d] = sizes[d];
  cl::format_strides(v.ndim, v.sizes, format, v.strides);
  return v;
}

Dims strides_of(const cc::View& v) { return Dims(v.strides, v.strides + v.ndim); }
Dims sizes_of(const cc::View& v) { return Dims(v.sizes, v.sizes + v.ndim); }

cc::Spec spec(const Dims& x, const Dims& w, const Dims& y, cl::Format format) {
  cc::Spec s;
  s.x = view(x, format);
  s.w = view(w, format);
  s.y = view(y, format);
  s.spatial = static_cast<int64_t>(x.size()) - 2;
  return s;
}

// A single-group convolution (the view sizes, strides, padding and
// dilation given) on operands of the given layouts, with values from a
// fixed sequence, run two ways through memory laid out as the views say:
// directly, and as im2col_of says (the input copied into a zeroed padded
// buffer where it pads, the gather view copied densely, then the product
// as conv_alternatives.cpp runs it for the output's layout). The largest
// difference, or -1 where im2col_of does not take it.
struct Geometry {
  Dims x, w;
  int64_t stride[2], padding[2], dilation[2];
};

double im2col_error(const Geometry& g, cl::Format x_format, cl::Format w_format, cl::Format y_format) {
  const int64_t n = g.x[0], c = g.x[1], h = g.x[2], w = g.x[3], o = g.w[0], kh = g.w[2], kw = g.w[3];
  const int64_t ho = (h + 2 * g.padding[0] - g.dilation[0] * (kh - 1) - 1) / g.stride[0] + 1;
  const int64_t wo = (w + 2 * g.padding[1] - g.dilation[1] * (kw - 1) - 1) / g.stride[1] + 1;
  cc::Spec s;
  s.x = view(g.x, x_format);
  s.w = view(g.w, w_format);
  s.y = view({n, o, ho, wo}, y_format);
  s.spatial = 2;
  for (int d = 0; d < 2; ++d) s.stride[d] = g.stride[d], s.padding[d] = g.padding[d], s.dilation[d] = g.dilation[d];
  cc::Im2col u;
  if (!cc::im2col_of(s, &u)) return -1;
  auto at = [](const int64_t* strides, int64_t a, int64_t b, int64_t i, int64_t j) {
    return a * strides[0] + b * strides[1] + i * strides[2] + j * strides[3];
  };
  std::vector<double> x(n * c * h * w), weight(o * c * kh * kw);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>((i * 7919) % 23) - 11;
  for (size_t i = 0; i < weight.size(); ++i) weight[i] = static_cast<double>((i * 104729) % 19) - 9;
  std::vector<double> direct(n * o * ho * wo), y(n * o * ho * wo, 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t k = 0; k < o; ++k)
      for (int64_t r = 0; r < ho; ++r)
        for (int64_t q = 0; q < wo; ++q) {
          double sum = 0;
          for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t row = r * g.stride[0] - g.padding[0] + i * g.dilation[0];
                const int64_t col = q * g.stride[1] - g.padding[1] + j * g.dilation[1];
                if (row >= 0 && row < h && col >= 0 && col < w)
                  sum += x[at(s.x.strides, b, ch, row, col)] * weight[at(s.w.strides, k, ch, i, j)];
              }
          direct[at(s.y.strides, b, k, r, q)] = sum;
        }
  // What the windows are gathered from: the input, or its zero-padded copy.
  std::vector<double> source = x;
  if (u.padded) {
    if (Dims(u.padded_sizes, u.padded_sizes + 4) != Dims{n, c, h + 2 * g.padding[0], w + 2 * g.padding[1]}) return 1e9;
    const cc::View same_layout = view(Dims(u.padded_sizes, u.padded_sizes + 4), x_format);
    if (strides_of(same_layout) != Dims(u.padded_strides, u.padded_strides + 4)) return 1e9;  // dense, the input's layout
    source.assign(n * c * u.padded_sizes[2] * u.padded_sizes[3], 0.0);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t i = 0; i < h; ++i)
          for (int64_t j = 0; j < w; ++j)
            source[at(u.padded_strides, b, ch, i + g.padding[0], j + g.padding[1])] = x[at(s.x.strides, b, ch, i, j)];
  }
  std::vector<double> matrix;  // the gather: its view walked in order
  int64_t index[6] = {};
  for (int64_t e = 0; e < u.product.rows * u.product.inner; ++e) {
    int64_t offset = 0;
    for (int d = 0; d < 6; ++d) offset += index[d] * u.gather_strides[d];
    matrix.push_back(source[offset]);
    for (int d = 5; d >= 0 && ++index[d] == u.gather_sizes[d]; --d) index[d] = 0;
  }
  // The one-pass gather (conv_windows.h), element by element, from the
  // input as it lies: the same matrix, exactly.
  cc::WindowIndex windows;
  if (!cc::window_index_of(s, u, &windows) || windows.count != matrix.size()) return 1e9;
  for (uint32_t e = 0; e < windows.count; ++e) {
    uint32_t offset = 0;
    const double value = windows.source(e, &offset) ? x[offset] : 0.0;
    if (value != matrix[e]) return 1e9;
  }
  // Widened (conv_windows.h's widen_window_index), a word of `width`
  // elements at a time, where it applies: a channels-last weight on an input
  // whose channels lie contiguous, `width` dividing their count. Each word
  // holds the same matrix elements, exactly.
  for (uint32_t width : {2u, 4u, 8u}) {
    cc::WindowIndex wide;
    const bool applies = w_format == cl::Format::ChannelsLast && c > 1 && x_format == cl::Format::ChannelsLast &&
                         c % width == 0;
    if (cc::widen_window_index(windows, width, &wide) != applies) return 1e9;
    if (!applies) continue;
    if (wide.count * width != windows.count) return 1e9;
    for (uint32_t word = 0; word < wide.count; ++word) {
      uint32_t offset = 0;
      const bool inside = wide.source(word, &offset);
      for (uint32_t lane = 0; lane < width; ++lane) {
        const double value = inside ? x[static_cast<size_t>(offset) * width + lane] : 0.0;
        if (value != matrix[static_cast<size_t>(word) * width + lane]) return 1e9;
      }
    }
  }
  // y[rows, cols] = a[rows, inner] times b[cols, inner] transposed, row-major, as run_gemm.
  auto gemm = [](const double* a, const double* b, double* out, int64_t rows, int64_t inner, int64_t cols) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < cols; ++k) {
        double sum = 0;
        for (int64_t i = 0; i < inner; ++i) sum += a[r * inner + i] * b[k * inner + i];
        out[r * cols + k] = sum;
      }
  };
  // The product writes the output's memory as it lies, read back through its view.
  int64_t packed[5];
  if (cc::packed_as(s.y, cl::Format::ChannelsLast, packed) != (u.output == cc::Im2col::Output::kChannelsLast))
    return 1e9;
  if (u.output == cc::Im2col::Output::kContiguous) {
    const int64_t windows = ho * wo;
    for (int64_t b = 0; b < n; ++b)
      gemm(weight.data(), matrix.data() + b * windows * u.product.inner, y.data() + b * o * windows, o,
           u.product.inner, windows);
  } else {
    gemm(matrix.data(), weight.data(), y.data(), u.product.rows, u.product.inner, u.product.cols);
  }
  double most = 0;
  for (size_t i = 0; i < y.size(); ++i) most = std::max(most, std::fabs(y[i] - direct[i]));
  return most;
}

}  // namespace

int main() {
  const cl::Format last = cl::Format::ChannelsLast, contiguous = cl::Format::Contiguous;

  // Whisper's first convolution, 1-D on contiguous operands (4-D views [N, C, 1, L]).
  const cc::Spec whisper = spec({1, 80, 1, 3000}, {384, 80, 1, 3}, {1, 384, 1, 3000}, contiguous);
  cc::Spec moved;
  expect(cc::channels_last_spec(whisper, &moved), "Whisper's front end is taken");
  expect(strides_of(moved.x) == Dims{240000, 1, 240000, 80}, "its input channels-last");
  expect(strides_of(moved.w) == Dims{240, 1, 240, 80}, "its weight channels-last");
  expect(strides_of(moved.y) == Dims{1152000, 1, 1152000, 384}, "its output channels-last");
  expect(sizes_of(moved.x) == sizes_of(whisper.x) && sizes_of(moved.y) == sizes_of(whisper.y), "sizes unchanged");
  expect(!cc::channels_last_spec(spec({2, 3, 224, 224}, {64, 3, 7, 7}, {2, 64, 112, 112}, last), &moved),
         "channels-last operands: not taken");
  cc::Spec mixed = whisper;
  mixed.y = view({1, 384, 1, 3000}, last);
  expect(!cc::channels_last_spec(mixed, &moved), "one operand channels-last already: not taken");
  expect(!cc::channels_last_spec(spec({2, 8, 1, 1}, {16, 8, 1, 1}, {2, 16, 1, 1}, contiguous), &moved),
         "1x1 maps, where both layouts are the same memory: not taken");
  expect(cc::channels_last_spec(spec({1, 4, 6, 6, 6}, {8, 4, 3, 3, 3}, {1, 8, 4, 4, 4}, contiguous), &moved) &&
             strides_of(moved.x) == Dims{864, 1, 144, 24, 4},
         "3-D: channels-last-3d");

  // im2col: ViT-B/16's patch embedding as Inductor hands it (channels-last), and as a model may (contiguous).
  cc::Spec vit = spec({2, 3, 64, 64}, {768, 3, 16, 16}, {2, 768, 4, 4}, last);
  vit.stride[0] = vit.stride[1] = 16;
  vit.dilation[0] = vit.dilation[1] = 1;
  cc::Im2col u;
  expect(cc::im2col_of(vit, &u) && !u.padded, "ViT-B/16's patch embedding is taken, nothing padded");
  expect(u.product.rows == 32 && u.product.inner == 768 && u.product.cols == 768,
         "its product: [32, 768] times [768, 768]");
  expect(Dims(u.gather_sizes, u.gather_sizes + 6) == Dims{2, 4, 4, 16, 16, 3} &&
             Dims(u.gather_strides, u.gather_strides + 6) == Dims{12288, 3072, 48, 192, 3, 1},
         "a channels-last weight: each window's elements in (i, j, c) order, from the input as it lies");
  expect(u.output == cc::Im2col::Output::kChannelsLast, "a channels-last output: one product writes it");
  cc::Spec vit_contiguous = vit;
  vit_contiguous.x = view({2, 3, 64, 64}, contiguous);
  vit_contiguous.w = view({768, 3, 16, 16}, contiguous);
  vit_contiguous.y = view({2, 768, 4, 4}, contiguous);
  expect(cc::im2col_of(vit_contiguous, &u) && Dims(u.gather_sizes, u.gather_sizes + 6) == Dims{2, 4, 4, 3, 16, 16} &&
             Dims(u.gather_strides, u.gather_strides + 6) == Dims{12288, 1024, 16, 4096, 64, 1} &&
             u.output == cc::Im2col::Output::kContiguous,
         "contiguous operands: (c, i, j) order, a product per image");

  // Whisper's second convolution: 1-D, padded, strided, contiguous.
  cc::Spec conv2 = spec({1, 384, 1, 3000}, {384, 384, 1, 3}, {1, 384, 1, 1500}, contiguous);
  conv2.stride[0] = 1, conv2.stride[1] = 2, conv2.padding[1] = 1, conv2.dilation[0] = conv2.dilation[1] = 1;
  expect(cc::im2col_of(conv2, &u) && u.padded && Dims(u.padded_sizes, u.padded_sizes + 4) == Dims{1, 384, 1, 3002},
         "Whisper's conv2 is taken, padded to 3002");
  expect(Dims(u.gather_sizes, u.gather_sizes + 6) == Dims{1, 1, 1500, 384, 1, 3} &&
             Dims(u.gather_strides, u.gather_strides + 6) == Dims{1152768, 3002, 2, 3002, 3002, 1} &&
             u.product.rows == 1500 && u.product.inner == 1152 && u.product.cols == 384,
         "its windows: 1500 of 384 x 3, two apart, from the padded copy");

  // resnet18's stem, channels-last: 7x7 windows, stride 2, padded by 3.
  cc::Spec stem = spec({2, 3, 224, 224}, {64, 3, 7, 7}, {2, 64, 112, 112}, last);
  stem.stride[0] = stem.stride[1] = 2, stem.padding[0] = stem.padding[1] = 3;
  stem.dilation[0] = stem.dilation[1] = 1;
  expect(cc::im2col_of(stem, &u) && u.padded && Dims(u.padded_sizes, u.padded_sizes + 4) == Dims{2, 3, 230, 230} &&
             u.product.rows == 25088 && u.product.inner == 147 && u.product.cols == 64 &&
             u.output == cc::Im2col::Output::kChannelsLast,
         "resnet18's stem: [25088, 147] windows of the padded copy, one product into the output");

  // Which of them the tuning offers im2col (im2col_suits): each of the above for its own reason.
  expect(cc::im2col_of(vit, &u) && cc::im2col_suits(vit, u, 4), "a patch embedding is offered im2col");
  expect(cc::im2col_of(vit_contiguous, &u) && cc::im2col_suits(vit_contiguous, u, 2),
         "a patch embedding on contiguous operands too");
  expect(cc::im2col_of(conv2, &u) && cc::im2col_suits(conv2, u, 4), "a 1-D convolution is offered im2col");
  expect(cc::im2col_of(stem, &u) && cc::im2col_suits(stem, u, 4), "a float32 RGB stem is offered im2col");
  auto padded_3x3 = [](const Dims& x, const Dims& w, const Dims& y, cl::Format format) {
    cc::Spec s = spec(x, w, y, format);
    s.stride[0] = s.stride[1] = s.dilation[0] = s.dilation[1] = 1;
    s.padding[0] = s.padding[1] = 1;
    return s;
  };
  const cc::Spec layer4 = padded_3x3({2, 512, 7, 7}, {512, 512, 3, 3}, {2, 512, 7, 7}, last);
  expect(cc::im2col_of(layer4, &u) && u.product.rows == 98 && u.product.inner == 4608 &&
             cc::im2col_suits(layer4, u, 4),
         "resnet18's layer4 3x3 at batch 2, channels-last: a small window matrix [98, 4608], offered im2col");
  const cc::Spec wide_batch = padded_3x3({32, 64, 56, 56}, {64, 64, 3, 3}, {32, 64, 56, 56}, last);
  expect(cc::im2col_of(wide_batch, &u) && !cc::im2col_suits(wide_batch, u, 4),
         "resnet's layer1 3x3 at batch 32: a window matrix of 231 MB, not offered");
  expect(cc::im2col_of(wide_batch, &u) && !cc::im2col_suits(wide_batch, u, 2), "nor in 16 bits (115 MB)");
  const cc::Spec contiguous_3x3 = padded_3x3({2, 64, 28, 28}, {64, 64, 3, 3}, {2, 64, 28, 28}, contiguous);
  expect(cc::im2col_of(contiguous_3x3, &u) && !cc::im2col_suits(contiguous_3x3, u, 4),
         "a contiguous 3x3 of 64 channels: not offered (its alternative is the channels-last copies)");
  cc::Spec at_most = spec({1, 256, 256, 256}, {64, 256, 1, 1}, {1, 64, 256, 256}, last);
  at_most.stride[0] = at_most.stride[1] = at_most.dilation[0] = at_most.dilation[1] = 1;
  expect(cc::im2col_of(at_most, &u) && u.product.rows * u.product.inner * 4 == cc::kIm2colMostBytes &&
             cc::im2col_suits(at_most, u, 4),
         "a window matrix of exactly the most bytes: offered");
  cc::Spec past_most = at_most;
  past_most.x = view({1, 256, 256, 257}, last);
  past_most.y = view({1, 64, 256, 257}, last);
  expect(cc::im2col_of(past_most, &u) && !cc::im2col_suits(past_most, u, 4), "one row past it: not offered");

  auto refused = [&](void (*change)(cc::Spec&), const char* what) {
    cc::Spec other = vit;
    change(other);
    expect(!cc::im2col_of(other, &u), what);
  };
  refused([](cc::Spec& s) { s.transposed = true; }, "transposed: not taken");
  refused([](cc::Spec& s) { s.w = view({768, 1, 16, 16}, cl::Format::ChannelsLast); }, "groups: not taken");
  refused([](cc::Spec& s) { s.y = view({2, 768, 5, 4}, cl::Format::ChannelsLast); }, "another output size: not taken");
  refused([](cc::Spec& s) { s.w.strides[0] = 1, s.w.strides[1] = 768 * 256, s.w.strides[2] = 768 * 16; },
          "a weight in neither layout: not taken");
  refused([](cc::Spec& s) { s.stride[0] = 0; }, "a zero stride: not taken");
  refused([](cc::Spec& s) { s.y.strides[1] = 16, s.y.strides[2] = 4, s.y.strides[3] = 1, s.y.strides[0] = 1; },
          "an output in neither layout: not taken");
  refused([](cc::Spec& s) { s.dilation[1] = 5; }, "a window wider than the padded input: not taken");
  expect(!cc::im2col_of(spec({1, 4, 6, 6, 6}, {8, 4, 3, 3, 3}, {1, 8, 4, 4, 4}, contiguous), &u), "3-D: not taken");

  // Both ways give the same numbers, over every layout and geometry: patches that leave rows and columns
  // unread, a 1-D one padded and strided, a dilated one, one channel, and a 3x3 padded.
  const Geometry geometries[] = {{{2, 3, 9, 10}, {5, 3, 4, 3}, {4, 3}, {0, 0}, {1, 1}},
                                 {{1, 4, 1, 12}, {6, 4, 1, 3}, {1, 2}, {0, 1}, {1, 1}},
                                 {{2, 2, 7, 8}, {3, 2, 2, 3}, {1, 2}, {1, 2}, {2, 1}},
                                 {{3, 1, 8, 8}, {2, 1, 2, 2}, {2, 2}, {0, 0}, {1, 1}},
                                 {{1, 3, 5, 5}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}},
                                 {{2, 3, 4, 4}, {5, 3, 4, 4}, {4, 4}, {0, 0}, {1, 1}},  // one window an image
                                 {{2, 3, 6, 7}, {1, 3, 3, 2}, {1, 1}, {1, 0}, {1, 1}},  // one output channel
                                 {{3, 2, 1, 9}, {4, 2, 1, 3}, {1, 2}, {0, 2}, {1, 2}},  // 1-D, padded, dilated
                                 {{2, 5, 6, 6}, {3, 5, 1, 1}, {1, 1}, {0, 0}, {1, 1}},  // 1x1
                                 // Channels that words of 2, 4 and 8 elements divide (widen_window_index).
                                 {{2, 8, 5, 6}, {3, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}},
                                 {{1, 4, 7, 7}, {2, 4, 3, 2}, {2, 2}, {1, 0}, {1, 2}},
                                 {{2, 6, 4, 4}, {2, 6, 2, 2}, {2, 2}, {0, 0}, {1, 1}}};
  for (const Geometry& g : geometries)
    for (cl::Format xf : {last, contiguous})
      for (cl::Format wf : {last, contiguous})
        for (cl::Format yf : {last, contiguous}) {
          const std::string what = "x " + std::to_string(g.x[2]) + "x" + std::to_string(g.x[3]) + " w " +
                                   std::to_string(g.w[2]) + "x" + std::to_string(g.w[3]) +
                                   (xf == last ? ", x last" : ", x contiguous") +
                                   (wf == last ? ", w last" : ", w contiguous") +
                                   (yf == last ? ", y last" : ", y contiguous");
          expect(im2col_error(g, xf, wf, yf) == 0, what);
        }

  return host_check::finish();
}
