// conv_pad_channels.h: rows of few channels copied into 16-byte rows.

#include "shims/convolution/conv_pad_channels.h"

#include <string>

#include "runtime/errors.h"
#include "shims/convolution/conv_view.h"

namespace aotirt {
namespace conv_cuda {
namespace {

constexpr int kThreads = 256;

// One thread per padded element, so that the writes (the larger side) are
// coalesced; the first `first_blocks` blocks pad `first`, the others
// `second`. Elements are copied as raw bits of their size.
template <typename Bits>
__global__ void pad_rows(PadRows first, PadRows second, int32_t channels, int32_t padded, uint32_t first_blocks) {
  const bool is_first = blockIdx.x < first_blocks;
  const PadRows job = is_first ? first : second;
  const uint32_t block = is_first ? blockIdx.x : blockIdx.x - first_blocks;
  const int64_t index = static_cast<int64_t>(block) * kThreads + threadIdx.x;
  if (index >= job.rows * padded) return;
  const auto i = static_cast<int32_t>(index);  // below rows * padded, which pad_fits keeps in 32 bits
  const int32_t row = i / padded, lane = i - row * padded;
  const Bits* src = static_cast<const Bits*>(job.src);
  static_cast<Bits*>(job.dst)[i] = lane < channels ? src[row * channels + lane] : Bits(0);
}

uint32_t blocks_for(const PadRows& job, int64_t padded) {
  return static_cast<uint32_t>((job.rows * padded + kThreads - 1) / kThreads);
}

}  // namespace

aotirt_status pad_channels(const PadRows& first, const PadRows& second, int64_t channels, int64_t padded,
                           size_t itemsize, cudaStream_t stream) {
  if (!pad_fits(first.rows, padded) || !pad_fits(second.rows, padded) || channels < 1 || channels > padded ||
      (itemsize != 2 && itemsize != 4))
    return fail(AOTIRT_ERROR_AOTI, "pad_channels: " + std::to_string(first.rows) + " and " +
                                       std::to_string(second.rows) + " rows of " + std::to_string(channels) +
                                       " channels of " + std::to_string(itemsize) + " bytes padded to " +
                                       std::to_string(padded) + " is not a padding it takes");
  const uint32_t first_blocks = blocks_for(first, padded);
  const uint32_t blocks = first_blocks + blocks_for(second, padded);
  if (blocks == 0) return AOTIRT_OK;
  const auto c = static_cast<int32_t>(channels), p = static_cast<int32_t>(padded);
  if (itemsize == 4)
    pad_rows<uint32_t><<<blocks, kThreads, 0, stream>>>(first, second, c, p, first_blocks);
  else
    pad_rows<uint16_t><<<blocks, kThreads, 0, stream>>>(first, second, c, p, first_blocks);
  const cudaError_t launched = cudaGetLastError();
  return launched == cudaSuccess ? AOTIRT_OK : fail_cuda(launched, "pad_channels: launching its kernel");
}

}  // namespace conv_cuda
}  // namespace aotirt
