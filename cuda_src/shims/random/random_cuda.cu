// The CUDA fill of the random shims: one thread per Philox block, reading
// {seed, first counter} from the generator's device memory, then one thread
// advancing the counter (runtime/rng.h says why the state is on the device:
// so that each replay of a CUDA graph draws new numbers).

#include <algorithm>

#include "runtime/rng.h"
#include "runtime/stream.h"
#include "shims/host_elements.h"
#include "shims/random/random.h"

namespace aotirt {
namespace random {
namespace {

constexpr int kThreads = 256;
constexpr uint64_t kMaxBlocks = uint64_t{1} << 16;  // a grid-stride loop covers the rest

template <typename T>
__global__ void fill(Draw d, const uint64_t* state, Layout layout, T* out, int64_t n, uint64_t blocks) {
  const uint64_t seed = state[0], first = state[1];
  const int per = per_block<T>(d);
  T values[4];
  for (uint64_t b = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; b < blocks;
       b += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    block_values<T>(d, seed, first + b, values);
    for (int j = 0; j < per; ++j) {
      const int64_t i = static_cast<int64_t>(b) * per + j;
      if (i < n) out[layout.offset(i)] = values[j];
    }
  }
}

}  // namespace

aotirt_status run_cuda(const char* name, const Draw& d, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return AOTIRT_OK;
  const int device = out.storage->device_index;
  AOTIRT_TRY(check_device_usable(device));
  DeviceGuard guard;
  AOTIRT_TRY(guard.enter(device));
  StreamRef stream;
  AOTIRT_TRY(stream_for_device(device, &stream));
  AOTIRT_TRY(use_on(out, stream.get()));  // earlier work on out's memory comes first
  const uint64_t blocks = blocks_for(d, out.dtype, n);
  uint64_t* words = nullptr;
  std::unique_lock<std::mutex> lock;
  AOTIRT_TRY(current_generator().use_on_device(device, stream.get(), &words, &lock));
  const Layout layout = layout_of(out);
  const unsigned grid = static_cast<unsigned>(std::min<uint64_t>((blocks + kThreads - 1) / kThreads, kMaxBlocks));
  const bool known = host::dispatch_dtype(out.dtype, [&](auto zero) {
    using T = decltype(zero);
    fill<T><<<grid, kThreads, 0, stream->handle>>>(d, words, layout, static_cast<T*>(out.data()), n, blocks);
  });
  if (!known)
    return fail(AOTIRT_ERROR_TYPE, std::string(name) + ": dtype " + dtype_name(out.dtype) + " is not supported");
  AOTIRT_CUDA_TRY(cudaGetLastError());
  AOTIRT_TRY(advance_device_counter(words, blocks, stream->handle));
  out.stream = std::move(stream);  // consumers of out now wait for this stream
  return AOTIRT_OK;
}

}  // namespace random
}  // namespace aotirt
