// Host-only check of cuda_src/shims/convolution/conv_layout.h (built and run
// by tests/shims/test_conv_layout.py; no GPU, no cuDNN).
//
// The expected strides are torch's: each case says which of its rules
// decides (meta_conv's pick_memory_format, then fake_impls.conv's backend
// memory format, see conv_layout.h). The CPU cases are the ones
// tests/shims/test_conv_cpu.py checks through the shim.

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "conv_layout.h"
#include "host_check.h"

namespace cl = aotirt::conv_layout;
using Dims = std::vector<int64_t>;

namespace {

std::string text(const Dims& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}

using host_check::expect;

// Element strides of [N, C, *spatial] over [N, *spatial, C] memory.
Dims channels_last(const Dims& shape) {
  Dims s(shape.size());
  s[1] = 1;
  int64_t step = shape[1];
  for (size_t d = shape.size() - 1; d >= 2; --d) {
    s[d] = step;
    step *= shape[d];
  }
  s[0] = step;
  return s;
}

Dims contiguous(const Dims& shape) {
  Dims s(shape.size());
  int64_t step = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = step;
    step *= shape[d] > 1 ? shape[d] : 1;
  }
  return s;
}

struct Case {
  const char* name;
  bool cuda;
  bool float64;
  Dims in, in_strides, w, w_strides;
  Dims stride, padding, dilation, output_padding;
  int64_t groups;
  bool transposed;
  Dims want_sizes, want_strides;
  cl::Format want_backend;
};

void run(const Case& c) {
  cl::Geometry g;
  const std::string wrong = cl::describe(
      static_cast<int64_t>(c.in.size()), c.in.data(), static_cast<int64_t>(c.w.size()), c.w.data(), 0, nullptr,
      c.stride.data(), static_cast<int64_t>(c.stride.size()), c.padding.data(),
      static_cast<int64_t>(c.padding.size()), c.dilation.data(), static_cast<int64_t>(c.dilation.size()),
      c.transposed, c.output_padding.data(), static_cast<int64_t>(c.output_padding.size()), c.groups, &g);
  expect(wrong.empty(), std::string(c.name) + ": refused: " + wrong);
  if (!wrong.empty()) return;
  const Dims sizes(g.out_sizes, g.out_sizes + g.k);
  expect(sizes == c.want_sizes, std::string(c.name) + ": sizes " + text(sizes) + ", want " + text(c.want_sizes));
  Dims strides(g.k);
  cl::Format backend;
  cl::output_strides(c.cuda, g.k, c.in.data(), c.in_strides.data(), c.w.data(), c.w_strides.data(), g.out_sizes,
                     c.float64, strides.data(), &backend);
  expect(strides == c.want_strides,
         std::string(c.name) + ": strides " + text(strides) + ", want " + text(c.want_strides));
  expect(backend == c.want_backend, std::string(c.name) + ": backend format " + std::to_string(int(backend)) +
                                        ", want " + std::to_string(int(c.want_backend)));
}

void refused(const char* name, Dims in, Dims w, Dims bias, Dims stride, Dims padding, Dims dilation, Dims op,
             int64_t groups, bool transposed, const std::string& fragment) {
  cl::Geometry g;
  const std::string wrong = cl::describe(
      static_cast<int64_t>(in.size()), in.data(), static_cast<int64_t>(w.size()), w.data(),
      static_cast<int64_t>(bias.size()), bias.empty() ? nullptr : bias.data(), stride.data(),
      static_cast<int64_t>(stride.size()), padding.data(), static_cast<int64_t>(padding.size()), dilation.data(),
      static_cast<int64_t>(dilation.size()), transposed, op.data(), static_cast<int64_t>(op.size()), groups, &g);
  expect(wrong.find(fragment) != std::string::npos,
         std::string(name) + ": message \"" + wrong + "\" lacks \"" + fragment + "\"");
}

}  // namespace

namespace {

// cl::as_matmul: which convolutions are one matrix product in place.
void check_as_matmul() {
  const Dims x{2, 24, 56, 56}, w{144, 24, 1, 1}, y{2, 144, 56, 56}, one{1, 1}, zero{0, 0}, two{2, 2};
  auto matmul = [](const Dims& xs, const Dims& xst, const Dims& ws, const Dims& wst, const Dims& ys, const Dims& yst,
                   const Dims& stride, const Dims& padding, bool transposed, cl::MatmulShape* shape) {
    return cl::as_matmul(static_cast<int64_t>(xs.size()), xs.data(), xst.data(), ws.data(), wst.data(), ys.data(),
                         yst.data(), stride.data(), padding.data(), transposed, shape);
  };
  cl::MatmulShape m;
  expect(matmul(x, channels_last(x), w, channels_last(w), y, channels_last(y), one, zero, false, &m) &&
             m.rows == 2 * 56 * 56 && m.inner == 24 && m.cols == 144,
         "as_matmul: a channels-last 1x1 convolution is [N*H*W, C] x [C, K]");
  expect(matmul(x, channels_last(x), w, contiguous(w), y, channels_last(y), one, zero, false, &m),
         "as_matmul: a contiguous 1x1 weight is the same memory");
  expect(!matmul(x, contiguous(x), w, contiguous(w), y, contiguous(y), one, zero, false, &m),
         "as_matmul: not for contiguous (NCHW) operands");
  expect(!matmul(x, channels_last(x), w, channels_last(w), y, contiguous(y), one, zero, false, &m),
         "as_matmul: not into a contiguous output");
  const Dims y2{2, 144, 28, 28};
  expect(!matmul(x, channels_last(x), w, channels_last(w), y2, channels_last(y2), two, zero, false, &m),
         "as_matmul: not with a stride of 2");
  expect(!matmul(x, channels_last(x), w, channels_last(w), Dims{2, 144, 58, 58}, channels_last(Dims{2, 144, 58, 58}),
                 one, one, false, &m),
         "as_matmul: not with padding");
  const Dims w3{144, 24, 3, 3}, wg{144, 12, 1, 1};
  expect(!matmul(x, channels_last(x), w3, channels_last(w3), Dims{2, 144, 54, 54},
                 channels_last(Dims{2, 144, 54, 54}), one, zero, false, &m),
         "as_matmul: not a 3x3 kernel");
  expect(!matmul(x, channels_last(x), wg, channels_last(wg), y, channels_last(y), one, zero, false, &m),
         "as_matmul: not grouped (two groups of 12 channels)");
  expect(!matmul(x, channels_last(x), w, channels_last(w), y, channels_last(y), one, zero, true, &m),
         "as_matmul: not transposed");
  Dims padded = channels_last(x);
  padded[0] += 8;  // batch rows apart by more than the image: not one matrix
  expect(!matmul(x, padded, w, channels_last(w), y, channels_last(y), one, zero, false, &m),
         "as_matmul: not with a gap between images");
  const Dims x1{1, 24, 1, 1}, y1{1, 144, 1, 1};  // one pixel: every stride but C's is free
  expect(matmul(x1, Dims{999, 1, 7, 5}, w, channels_last(w), y1, Dims{1000, 1, 2, 2}, one, zero, false, &m) &&
             m.rows == 1,
         "as_matmul: unit dimensions may have any stride");
  const Dims x5{2, 24, 4, 4, 4}, w5{144, 24, 1, 1, 1};
  expect(!cl::as_matmul(5, x5.data(), channels_last(x5).data(), w5.data(), channels_last(w5).data(), x5.data(),
                        channels_last(x5).data(), Dims{1, 1, 1}.data(), Dims{0, 0, 0}.data(), false, &m),
         "as_matmul: 2-D only");
}

}  // namespace

int main() {
  check_as_matmul();
  using F = cl::Format;
  const F C = F::Contiguous, L = F::ChannelsLast, L3 = F::ChannelsLast3d;
  const Dims x2{2, 3, 8, 8}, w2{4, 3, 3, 3}, y2{2, 4, 6, 6};
  const Dims x3{2, 3, 4, 5, 6}, w3{4, 3, 2, 2, 2}, y3{2, 4, 3, 4, 5};
  const Dims x1{2, 3, 8}, w1{4, 3, 3}, y1{2, 4, 6};
  const Dims w1_okc{9, 1, 3};   // [O, I, K] stored [O, K, I]
  const Dims x1_lc{24, 1, 3};   // [N, C, L] stored [N, L, C]
  const Dims one2{1, 1}, zero2{0, 0}, one3{1, 1, 1}, zero3{0, 0, 0}, one1{1}, zero1{0};
  const std::vector<Case> cases = {
      // 2-D: channels-last when the input or the weight is (cuDNN's suggestion).
      {"cuda 2d contiguous", true, false, x2, contiguous(x2), w2, contiguous(w2), one2, zero2, one2, zero2, 1,
       false, y2, contiguous(y2), C},
      {"cuda 2d cl input", true, false, x2, channels_last(x2), w2, contiguous(w2), one2, zero2, one2, zero2, 1,
       false, y2, channels_last(y2), L},
      {"cuda 2d cl weight", true, false, x2, contiguous(x2), w2, channels_last(w2), one2, zero2, one2, zero2, 1,
       false, y2, channels_last(y2), L},
      // float64: meta_conv still says channels-last, cuDNN's suggestion is
      // contiguous, and .to(contiguous) restrides the channels-last output.
      {"cuda 2d cl input float64", true, true, x2, channels_last(x2), w2, contiguous(w2), one2, zero2, one2, zero2,
       1, false, y2, contiguous(y2), C},
      // 3-D: meta_conv never picks channels_last_3d; the backend does.
      {"cuda 3d cl3d input", true, false, x3, channels_last(x3), w3, contiguous(w3), one3, zero3, one3, zero3, 1,
       false, y3, Dims{240, 1, 80, 20, 4}, L3},
      {"cuda 3d cl3d weight", true, false, x3, contiguous(x3), w3, channels_last(w3), one3, zero3, one3, zero3, 1,
       false, y3, Dims{240, 1, 80, 20, 4}, L3},
      {"cuda 3d cl3d float64", true, true, x3, channels_last(x3), w3, contiguous(w3), one3, zero3, one3, zero3, 1,
       false, y3, contiguous(y3), C},
      // 1-D: decided over input.contiguous().unsqueeze(2) and weight.unsqueeze(2).
      {"cuda 1d contiguous", true, false, x1, contiguous(x1), w1, contiguous(w1), one1, zero1, one1, zero1, 1, false,
       y1, Dims{24, 6, 1}, C},
      {"cuda 1d cl weight", true, false, x1, contiguous(x1), w1, w1_okc, one1, zero1, one1, zero1, 1, false, y1,
       Dims{24, 1, 4}, L},
      {"cuda 1d cl input is made contiguous", true, false, x1, x1_lc, w1, contiguous(w1), one1, zero1, one1, zero1,
       1, false, y1, Dims{24, 6, 1}, C},
      {"cuda 1d cl weight float64", true, true, x1, contiguous(x1), w1, w1_okc, one1, zero1, one1, zero1, 1, false,
       y1, Dims{24, 6, 1}, C},
      // Transposed: weight [in, out / groups, ...]; out = (in - 1) s - 2 p + d (k - 1) + op + 1.
      {"cuda 2d transposed", true, false, Dims{2, 4, 5, 5}, contiguous(Dims{2, 4, 5, 5}), Dims{4, 3, 3, 3},
       contiguous(Dims{4, 3, 3, 3}), Dims{2, 2}, one2, one2, one2, 1, true, Dims{2, 3, 10, 10},
       Dims{300, 100, 10, 1}, C},
      {"cuda 2d transposed cl", true, false, Dims{2, 4, 5, 5}, channels_last(Dims{2, 4, 5, 5}), Dims{4, 3, 3, 3},
       contiguous(Dims{4, 3, 3, 3}), Dims{2, 2}, one2, one2, one2, 1, true, Dims{2, 3, 10, 10},
       Dims{300, 1, 30, 3}, L},
      {"cuda 2d transposed groups dilation", true, false, Dims{1, 4, 3, 3}, contiguous(Dims{1, 4, 3, 3}),
       Dims{4, 2, 2, 2}, contiguous(Dims{4, 2, 2, 2}), one2, zero2, Dims{2, 2}, Dims{1, 0}, 2, true,
       Dims{1, 4, 6, 5}, Dims{120, 30, 5, 1}, C},
      {"cuda 1d transposed cl weight", true, false, Dims{2, 4, 5}, contiguous(Dims{2, 4, 5}), Dims{4, 3, 3},
       Dims{9, 1, 3}, Dims{3}, one1, one1, Dims{2}, 1, true, Dims{2, 3, 15}, Dims{45, 1, 3}, L},
      {"cuda 3d transposed", true, false, Dims{1, 2, 3, 3, 3}, contiguous(Dims{1, 2, 3, 3, 3}), Dims{2, 2, 2, 2, 2},
       contiguous(Dims{2, 2, 2, 2, 2}), Dims{2, 2, 2}, zero3, one3, Dims{1, 0, 1}, 1, true, Dims{1, 2, 7, 6, 7},
       Dims{588, 294, 42, 7, 1}, C},
      // Empty inputs: torch's Empty backend, contiguous; no input channels, no output channels.
      {"cuda 2d no batch", true, false, Dims{0, 3, 8, 8}, contiguous(Dims{0, 3, 8, 8}), w2, channels_last(w2), one2,
       zero2, one2, zero2, 1, false, Dims{0, 4, 6, 6}, Dims{144, 1, 24, 4}, C},
      {"cuda 2d no channels", true, false, Dims{2, 0, 8, 8}, contiguous(Dims{2, 0, 8, 8}), Dims{4, 0, 3, 3},
       contiguous(Dims{4, 0, 3, 3}), one2, zero2, one2, zero2, 1, false, Dims{2, 0, 6, 6}, Dims{36, 36, 6, 1}, C},
      // Size-1 dimensions: [2, 1, 8, 8] over (64, 1, 8, 1) walks like channels-last.
      {"cuda 2d one channel cl", true, false, Dims{2, 1, 8, 8}, Dims{64, 1, 8, 1}, Dims{4, 1, 3, 3},
       contiguous(Dims{4, 1, 3, 3}), one2, zero2, one2, zero2, 1, false, y2, channels_last(y2), L},
      {"cuda 2d 1x1 cl input", true, false, Dims{2, 3, 1, 1}, Dims{3, 1, 3, 3}, Dims{4, 3, 1, 1},
       contiguous(Dims{4, 3, 1, 1}), one2, zero2, one2, zero2, 1, false, Dims{2, 4, 1, 1}, Dims{4, 1, 4, 4}, L},
      {"cuda 2d 1x1 contiguous", true, false, Dims{2, 3, 1, 1}, contiguous(Dims{2, 3, 1, 1}), Dims{4, 3, 1, 1},
       contiguous(Dims{4, 3, 1, 1}), one2, zero2, one2, zero2, 1, false, Dims{2, 4, 1, 1}, Dims{4, 1, 1, 1}, C},
      // Overlapping weight strides that only the Python rule calls
      // channels-last: meta_conv's channels-last output is restrided to
      // cuDNN's contiguous.
      {"cuda 2d python-only cl weight", true, false, x2, contiguous(x2), w2, Dims{27, 1, 3, 1}, one2, zero2, one2,
       zero2, 1, false, y2, contiguous(y2), C},
      // Depthwise, stride, padding, dilation.
      {"cuda 2d depthwise cl", true, false, Dims{1, 8, 9, 9}, channels_last(Dims{1, 8, 9, 9}), Dims{8, 1, 3, 3},
       contiguous(Dims{8, 1, 3, 3}), Dims{2, 1}, Dims{1, 0}, Dims{1, 2}, zero2, 8, false, Dims{1, 8, 5, 5},
       channels_last(Dims{1, 8, 5, 5}), L},
      // The CPU rules (tests/shims/test_conv_cpu.py): the input alone decides
      // meta_conv, mkldnn/thnn the backend; 3-D channels-last only without float64.
      {"cpu 2d cl weight", false, false, x2, contiguous(x2), w2, channels_last(w2), one2, zero2, one2, zero2, 1,
       false, y2, Dims{144, 1, 24, 4}, L},
      {"cpu 2d cl input float64", false, true, x2, channels_last(x2), w2, contiguous(w2), one2, zero2, one2, zero2,
       1, false, y2, Dims{144, 1, 24, 4}, L},
      {"cpu 1d cl weight", false, false, x1, contiguous(x1), w1, w1_okc, one1, zero1, one1, zero1, 1, false, y1,
       Dims{24, 1, 4}, L},
      {"cpu 1d cl input", false, false, x1, x1_lc, w1, contiguous(w1), one1, zero1, one1, zero1, 1, false, y1,
       Dims{24, 6, 1}, C},
      {"cpu 1d cl weight float64", false, true, x1, contiguous(x1), w1, w1_okc, one1, zero1, one1, zero1, 1, false,
       y1, Dims{24, 1, 4}, L},
      {"cpu 3d cl3d input", false, false, x3, channels_last(x3), w3, contiguous(w3), one3, zero3, one3, zero3, 1,
       false, y3, Dims{240, 1, 80, 20, 4}, L3},
      {"cpu 3d cl3d input float64", false, true, x3, channels_last(x3), w3, contiguous(w3), one3, zero3, one3, zero3,
       1, false, y3, Dims{240, 60, 20, 5, 1}, C},
  };
  for (const Case& c : cases) run(c);

  // The two channels-last rules on their own.
  const Dims w2_overlap{27, 1, 3, 1};
  expect(cl::strides_like_channels_last(4, w2.data(), w2_overlap.data(), true) &&
             !cl::strides_like_channels_last(4, w2.data(), w2_overlap.data(), false),
         "python and c10 rules differ on (27, 1, 3, 1)");
  const Dims n111{2, 1, 1, 1}, n111_strides{1, 1, 1, 1};
  expect(cl::suggest(4, n111.data(), n111_strides.data()) == C, "N111 with unit strides is contiguous");
  const Dims zero_channel_stride{64, 0, 8, 1};
  expect(cl::suggest(4, x2.data(), zero_channel_stride.data()) == C, "a zero channel stride is contiguous");
  expect(cl::suggest(5, x3.data(), channels_last(x3).data()) == L3, "5-D channels-last is channels_last_3d");
  expect(cl::suggest(3, x1.data(), x1_lc.data()) == C, "3-D tensors have no channels-last format");

  // Checks and their messages.
  refused("groups", x2, w2, {}, one2, zero2, one2, {}, 0, false, "groups must be positive, got 0");
  refused("channels", x2, Dims{4, 2, 3, 3}, {}, one2, zero2, one2, {}, 1, false,
          "the input has 3 channels; the weight expects 2 per group times 1 groups");
  refused("split", Dims{1, 4, 8, 8}, Dims{5, 2, 3, 3}, {}, one2, zero2, one2, {}, 2, false,
          "the weight's 5 output channels do not split into 2 groups");
  refused("transposed channels", Dims{1, 4, 8, 8}, Dims{6, 2, 3, 3}, {}, one2, zero2, one2, zero2, 2, true,
          "expects weight.size(0) = 6");
  refused("bias", x2, w2, Dims{5}, one2, zero2, one2, {}, 1, false, "one value per output channel (4)");
  refused("transposed bias", Dims{1, 4, 8, 8}, Dims{4, 3, 3, 3}, Dims{4}, one2, zero2, one2, zero2, 2, true,
          "one value per output channel (6)");
  refused("stride count", x2, w2, {}, Dims{1, 1, 1}, zero2, one2, {}, 1, false,
          "stride has 3 values; the convolution has 2 spatial dimensions");
  refused("stride zero", x2, w2, {}, Dims{0}, zero2, one2, {}, 1, false, "stride 0");
  refused("negative padding", x2, w2, {}, one2, Dims{-1}, one2, {}, 1, false, "padding -1");
  refused("too small", x2, w2, {}, one2, zero2, Dims{5}, {}, 1, false, "spatial dimension 0 is too small");
  refused("output padding", Dims{1, 4, 5, 5}, Dims{4, 3, 3, 3}, {}, Dims{2}, zero2, Dims{2}, Dims{2}, 1, true,
          "output_padding 2 in spatial dimension 0 must be smaller than the stride (2) or the dilation (2)");
  refused("transposed output too small", Dims{1, 4, 1, 1}, Dims{4, 3, 1, 1}, {}, one2, Dims{1}, one2, zero2, 1,
          true, "of the output would be -1");
  refused("rank", x1, w2, {}, one2, zero2, one2, {}, 1, false, "the input must have the weight's 4 dimensions");
  refused("weight rank", x2, Dims{4, 3}, {}, one2, zero2, one2, {}, 1, false, "3, 4 or 5 dimensions");

  return host_check::finish();
}
