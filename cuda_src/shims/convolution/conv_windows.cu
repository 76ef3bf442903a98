// conv_windows.h: im2col's gather in one pass, on the GPU.

#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "runtime/errors.h"
#include "shims/convolution/conv_windows.h"

namespace aotirt {
namespace conv_cuda {
namespace {

constexpr int kThreads = 256;
constexpr uint32_t kMaxBlocks = 1u << 16;  // a grid-stride loop covers the rest

// One matrix element a thread: consecutive threads write consecutive
// elements (a window's, in the weight's order), so the stores coalesce.
// Elements move as same-sized words: one kernel per element width.
template <typename Word>
__global__ void __launch_bounds__(kThreads) gather(WindowIndex index, const Word* x, Word* matrix) {
  const uint32_t step = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < index.count; i += step) {
    uint32_t offset;
    matrix[i] = index.source(i, &offset) ? x[offset] : Word(0);
  }
}

}  // namespace

aotirt_status gather_windows(const WindowIndex& index, const void* x, void* matrix, size_t itemsize,
                             CUstream_st* stream) {
  if (index.count == 0) return AOTIRT_OK;
  const uint32_t blocks = std::min<uint32_t>((index.count + kThreads - 1) / kThreads, kMaxBlocks);
  switch (itemsize) {
    case 2:
      gather<uint16_t><<<blocks, kThreads, 0, stream>>>(index, static_cast<const uint16_t*>(x),
                                                         static_cast<uint16_t*>(matrix));
      break;
    case 4:
      gather<uint32_t><<<blocks, kThreads, 0, stream>>>(index, static_cast<const uint32_t*>(x),
                                                         static_cast<uint32_t*>(matrix));
      break;
    default:
      return fail(AOTIRT_ERROR_TYPE, "im2col's gather: no kernel for elements of " + std::to_string(itemsize) +
                                         " bytes");
  }
  AOTIRT_CUDA_TRY(cudaGetLastError());
  return AOTIRT_OK;
}

}  // namespace conv_cuda
}  // namespace aotirt
