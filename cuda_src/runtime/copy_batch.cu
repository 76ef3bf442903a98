#include "runtime/copy_batch.h"

#include <cuda_runtime_api.h>

#include <string>

#include "runtime/errors.h"
#include "runtime/stream.h"

namespace aotirt {
namespace {

using copy_batch::Plan;

constexpr unsigned kThreads = 256;
// Words each thread loads before it stores any: a chunk of 16-byte words is
// one round, its loads in flight together.
constexpr unsigned kUnroll = copy_batch::kChunkBytes / (kThreads * 16);
static_assert(kUnroll * kThreads * 16 == copy_batch::kChunkBytes, "a chunk of 16-byte words is one round");

struct alignas(2) Word2 {
  uint8_t b[2];
};

// One chunk of bytes [begin, end) of `copy`, in words of `Word` (the copy's
// addresses are aligned to it, and so is `begin`) and then byte by byte.
template <typename Word>
__device__ void copy_chunk(const ContiguousCopy& copy, size_t begin, size_t end) {
  char* dst = static_cast<char*>(copy.dst);
  const char* src = static_cast<const char*>(copy.src);
  const size_t words_end = begin + (end - begin) / sizeof(Word) * sizeof(Word);
  constexpr size_t kStride = kThreads * sizeof(Word);
  for (size_t round = begin + threadIdx.x * sizeof(Word); round < words_end; round += kStride * kUnroll) {
    Word words[kUnroll];
#pragma unroll
    for (unsigned u = 0; u < kUnroll; ++u)
      if (round + u * kStride < words_end) words[u] = *reinterpret_cast<const Word*>(src + round + u * kStride);
#pragma unroll
    for (unsigned u = 0; u < kUnroll; ++u)
      if (round + u * kStride < words_end) *reinterpret_cast<Word*>(dst + round + u * kStride) = words[u];
  }
  for (size_t at = words_end + threadIdx.x; at < end; at += kThreads) dst[at] = src[at];
}

// __grid_constant__: the plan is read where the launch put it, its arrays
// indexed at run time without a copy to each thread's local memory.
__global__ void __launch_bounds__(kThreads) copy_batch_kernel(const __grid_constant__ Plan plan) {
  size_t begin, end;
  const ContiguousCopy& copy = plan.copies[copy_batch::chunk_span(plan, blockIdx.x, &begin, &end)];
  switch (copy_batch::word_bytes(copy.dst, copy.src)) {
    case 16: copy_chunk<uint4>(copy, begin, end); break;
    case 8: copy_chunk<uint2>(copy, begin, end); break;
    case 4: copy_chunk<uint32_t>(copy, begin, end); break;
    case 2: copy_chunk<Word2>(copy, begin, end); break;
    default: copy_chunk<uint8_t>(copy, begin, end); break;
  }
}

}  // namespace

aotirt_status copy_contiguous_batch(const ContiguousCopy* copies, size_t count, Stream* stream) {
  for (size_t first = 0; first < count; first += copy_batch::kCopiesPerLaunch) {
    const size_t here = count - first < copy_batch::kCopiesPerLaunch ? count - first : copy_batch::kCopiesPerLaunch;
    if (here == 1) {  // cheaper than a launch (copy_batch.h)
      const ContiguousCopy& lone = copies[first];
      if (lone.bytes > 0)
        AOTIRT_CUDA_TRY(cudaMemcpyAsync(lone.dst, lone.src, lone.bytes, cudaMemcpyDeviceToDevice, stream->handle));
      continue;
    }
    Plan plan;
    if (!copy_batch::plan_copies(copies + first, here, &plan))
      return fail(AOTIRT_ERROR_VALUE, "a batch of " + std::to_string(here) +
                                          " device copies takes more blocks than one launch has (2^31 - 1)");
    const uint32_t blocks = plan.first_chunk[plan.count];
    if (blocks == 0) continue;  // every copy empty
    copy_batch_kernel<<<blocks, kThreads, 0, stream->handle>>>(plan);
    AOTIRT_CUDA_TRY(cudaGetLastError());
  }
  return AOTIRT_OK;
}

}  // namespace aotirt
