// A per-stream cache of freed device blocks, in front of the CUDA pool.
//
// Memory freed on a stream can be handed to the next allocation on the same
// stream at once: the stream itself orders the new user after the old one,
// so no event and no host wait is needed. A steady-state run then queues only
// its kernels, instead of a cudaMallocAsync and a cudaFreeAsync per tensor
// (each one more operation for the host to issue and the GPU to process).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace aotirt {

class BlockCache {
 public:
  // The size a request is served at: small requests share bins of 512 bytes,
  // large ones bins of 1 MiB, so a slightly different shape still hits.
  static size_t round_up(size_t nbytes);

  // A cached block of exactly `rounded` bytes, or nullptr.
  void* take(size_t rounded);
  // Keeps the block for reuse on this stream; false when the cache is full
  // (then the caller frees it to the pool).
  bool give(void* block, size_t rounded);
  // Frees every cached block, stream-ordered on `stream`.
  void release_all(cudaStream_t stream);

 private:
  // Above this a stream returns blocks to the device pool, where other
  // streams can use them.
  static constexpr size_t kMaxCachedBytes = size_t(256) << 20;

  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_bytes_ = 0;
};

}  // namespace aotirt
