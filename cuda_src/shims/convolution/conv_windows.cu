// conv_windows.h: im2col's gather in one pass, on the GPU.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
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
    matrix[i] = index.source(i, &offset) ? x[offset] : Word{};
  }
}

template <typename Word>
aotirt_status launch(const WindowIndex& index, const void* x, void* matrix, CUstream_st* stream) {
  const uint32_t blocks = std::min<uint32_t>((index.count + kThreads - 1) / kThreads, kMaxBlocks);
  gather<Word><<<blocks, kThreads, 0, stream>>>(index, static_cast<const Word*>(x), static_cast<Word*>(matrix));
  AOTIRT_CUDA_TRY(cudaGetLastError());
  return AOTIRT_OK;
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace

aotirt_status gather_windows(const WindowIndex& index, const void* x, void* matrix, size_t itemsize,
                             CUstream_st* stream) {
  if (index.count == 0) return AOTIRT_OK;
  if (itemsize != 2 && itemsize != 4)
    return fail(AOTIRT_ERROR_TYPE, "im2col's gather: no kernel for elements of " + std::to_string(itemsize) +
                                       " bytes");
  WindowIndex wide;
  for (size_t bytes : {size_t{16}, size_t{8}}) {  // the widest word the layout and the pointers take
    const uint32_t width = static_cast<uint32_t>(bytes / itemsize);
    if (!aligned(x, bytes) || !aligned(matrix, bytes) || !widen_window_index(index, width, &wide)) continue;
    return bytes == 16 ? launch<uint4>(wide, x, matrix, stream) : launch<uint2>(wide, x, matrix, stream);
  }
  if (itemsize == 2 && aligned(x, 4) && aligned(matrix, 4) && widen_window_index(index, 2, &wide))
    return launch<uint32_t>(wide, x, matrix, stream);
  return itemsize == 2 ? launch<uint16_t>(index, x, matrix, stream) : launch<uint32_t>(index, x, matrix, stream);
}

}  // namespace conv_cuda
}  // namespace aotirt
