// A convolution of few input channels (a vision model's stem: three, RGB;
// a raw waveform's one) with its channels zero-padded to a 16-byte row:
// the candidate that a tuned run (AOTIRT_CUDNN_TUNE) measures beside
// cuDNN's engines for such a channels-last convolution, and runs where it
// was faster by more than the noise. Untuned runs never use it.
//
// Why offer it: three float32 channels are 12-byte rows, which cuDNN's
// tensor-core engines do not take as they lie; on the H200 resnet18's stem
// took 24 us on every engine cuDNN listed for it, about ten times what its
// arithmetic and memory traffic need. Zero channels change no sum, so the
// same convolution on rows padded to 16 bytes (input and weight copied each
// call: the weight may change between calls) gives the same result, on
// whatever engines cuDNN has for the padded shape. Whether the copies and
// that engine beat the unpadded one depends on the shape: measured, never
// assumed.
//
// The copy is aotirt's own small kernel (conv_pad_channels.cu): no library
// call pads the rows of a channels-last tensor on a stream (cuDNN's
// cudnnTransformTensorEx can, in its legacy ops library, which the graph
// API does not otherwise load, and which cuDNN 9 deprecates).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "aotirt/aotirt.h"

namespace aotirt {
namespace conv_cuda {

// The candidate's name, in the tuning's debug log and its choices' file.
constexpr const char* kPaddedChannelsEngine = "cudnn_padded_channels";

// One array to pad: `rows` rows of the call's channel count at `src`,
// written as rows of the padded count at `dst` (zeros after the channels).
struct PadRows {
  const void* src;
  void* dst;
  int64_t rows;
};

// Pads `first` and `second` (the input and the weight) in one launch,
// queued on `stream`; elements of `itemsize` bytes (2 or 4), copied as
// they are. Both must satisfy pad_fits (conv_view.h).
aotirt_status pad_channels(const PadRows& first, const PadRows& second, int64_t channels, int64_t padded,
                           size_t itemsize, cudaStream_t stream);

}  // namespace conv_cuda
}  // namespace aotirt
