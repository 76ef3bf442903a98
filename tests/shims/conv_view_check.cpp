// Host-only check of cuda_src/shims/convolution/conv_view.h (built and run by
// tests/shims/test_conv_view.py; no GPU, no cuDNN): which convolutions the
// tuning's padded-channels and channels-last alternatives take, and the
// views they run the same convolution on.

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "shims/convolution/conv_view.h"

namespace cc = aotirt::conv_cuda;
namespace cl = aotirt::conv_layout;
using Dims = std::vector<int64_t>;

namespace {

int checks = 0, failures = 0;

void expect(bool ok, const std::string& what) {
  ++checks;
  if (!ok) {
    ++failures;
    std::printf("FAILED: %s\n", what.c_str());
  }
}

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

}  // namespace

int main() {
  const cl::Format last = cl::Format::ChannelsLast, contiguous = cl::Format::Contiguous;

  // Rows of fewer channels than fill 16 bytes pad to 16 bytes; others are not taken.
  expect(cc::padded_channels(3, 4) == 4 && cc::padded_channels(1, 4) == 4, "float32: 1 and 3 channels pad to 4");
  expect(cc::padded_channels(3, 2) == 8 && cc::padded_channels(7, 2) == 8, "float16: 3 and 7 channels pad to 8");
  expect(cc::padded_channels(4, 4) == 0 && cc::padded_channels(8, 2) == 0 && cc::padded_channels(64, 4) == 0,
         "a full 16-byte row or more: not taken");
  expect(cc::padded_channels(0, 4) == 0 && cc::padded_channels(3, 8) == 0 && cc::padded_channels(3, 0) == 0,
         "no channels, float64, no itemsize: not taken");
  expect(cc::pad_fits(1000, 4) && cc::pad_fits(INT32_MAX / 4, 4) && !cc::pad_fits(INT32_MAX / 4 + 1, 4),
         "32-bit indices: rows * padded up to INT32_MAX");
  expect(!cc::pad_fits(-1, 4) && !cc::pad_fits(1, 0), "negative rows, no padded width: not taken");

  // resnet18's stem, channels-last float32: input and weight padded to 4 channels, the output as it is.
  const cc::Spec stem = spec({2, 3, 224, 224}, {64, 3, 7, 7}, {2, 64, 112, 112}, last);
  cc::Spec padded;
  expect(cc::padded_spec(stem, 4, &padded), "the stem is taken");
  expect(sizes_of(padded.x) == Dims{2, 4, 224, 224} && strides_of(padded.x) == Dims{200704, 1, 896, 4},
         "the padded input: [2, 4, 224, 224] channels-last");
  expect(sizes_of(padded.w) == Dims{64, 4, 7, 7} && strides_of(padded.w) == Dims{196, 1, 28, 4},
         "the padded weight: [64, 4, 7, 7] channels-last");
  expect(sizes_of(padded.y) == sizes_of(stem.y) && strides_of(padded.y) == strides_of(stem.y), "the output unchanged");
  expect(cc::padded_spec(stem, 2, &padded) && padded.x.sizes[1] == 8 && padded.x.strides[3] == 8,
         "float16: padded to 8 channels");

  expect(!cc::padded_spec(spec({2, 3, 224, 224}, {64, 3, 7, 7}, {2, 64, 112, 112}, contiguous), 4, &padded),
         "contiguous operands: not taken");
  cc::Spec output_contiguous = stem;
  output_contiguous.y = view({2, 64, 112, 112}, contiguous);
  expect(!cc::padded_spec(output_contiguous, 4, &padded), "a contiguous output: not taken");
  expect(!cc::padded_spec(spec({2, 3, 32, 32}, {3, 1, 3, 3}, {2, 3, 30, 30}, last), 4, &padded),
         "groups (a depthwise stem): not taken");
  cc::Spec transposed = stem;
  transposed.transposed = true;
  expect(!cc::padded_spec(transposed, 4, &padded), "transposed: not taken");
  expect(!cc::padded_spec(spec({2, 4, 32, 32}, {8, 4, 3, 3}, {2, 8, 30, 30}, last), 4, &padded),
         "four float32 channels (16-byte rows already): not taken");
  expect(!cc::padded_spec(spec({1, 3, 8, 8, 8}, {4, 3, 3, 3, 3}, {1, 4, 6, 6, 6}, cl::Format::ChannelsLast3d), 4,
                          &padded),
         "3-D: not taken");

  // Whisper's first convolution, 1-D on contiguous operands (4-D views [N, C, 1, L]).
  const cc::Spec whisper = spec({1, 80, 1, 3000}, {384, 80, 1, 3}, {1, 384, 1, 3000}, contiguous);
  cc::Spec moved;
  expect(cc::channels_last_spec(whisper, &moved), "Whisper's front end is taken");
  expect(strides_of(moved.x) == Dims{240000, 1, 240000, 80}, "its input channels-last");
  expect(strides_of(moved.w) == Dims{240, 1, 240, 80}, "its weight channels-last");
  expect(strides_of(moved.y) == Dims{1152000, 1, 1152000, 384}, "its output channels-last");
  expect(sizes_of(moved.x) == sizes_of(whisper.x) && sizes_of(moved.y) == sizes_of(whisper.y), "sizes unchanged");
  expect(!cc::channels_last_spec(stem, &moved), "channels-last operands: not taken");
  cc::Spec mixed = whisper;
  mixed.y = view({1, 384, 1, 3000}, last);
  expect(!cc::channels_last_spec(mixed, &moved), "one operand channels-last already: not taken");
  expect(!cc::channels_last_spec(spec({2, 8, 1, 1}, {16, 8, 1, 1}, {2, 16, 1, 1}, contiguous), &moved),
         "1x1 maps, where both layouts are the same memory: not taken");
  expect(cc::channels_last_spec(spec({1, 4, 6, 6, 6}, {8, 4, 3, 3, 3}, {1, 8, 4, 4, 4}, contiguous), &moved) &&
             strides_of(moved.x) == Dims{864, 1, 144, 24, 4},
         "3-D: channels-last-3d");

  std::printf("%d checks, %d failures\n", checks, failures);
  return failures ? 1 : 0;
}
