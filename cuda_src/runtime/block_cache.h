// A per-stream cache of freed device blocks, in front of the CUDA pool.
//
// Memory freed on a stream can be handed to the next allocation on the same
// stream at once: the stream itself orders the new user after the old one,
// so no event and no host wait is needed. A steady-state run then queues only
// its kernels, instead of a cudaMallocAsync and a cudaFreeAsync per tensor
// (each one more operation for the host to issue and the GPU to process).
//
// The cache only keeps the books and never calls CUDA: the blocks it lets go
// (to make room, or all of them) go back to the caller, which frees them to
// the pool, stream-ordered on the stream whose cache it is.
#pragma once

#include <cstddef>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace aotirt {

class BlockCache {
 public:
  // Above this a stream returns blocks to the device pool, where other
  // streams can use them.
  static constexpr size_t kMaxCachedBytes = size_t(256) << 20;

  // The size a request is served at: small requests share bins of 512 bytes,
  // large ones bins of 1 MiB, so a slightly different shape still hits.
  static size_t round_up(size_t nbytes);

  // The block of exactly `rounded` bytes given last, or nullptr.
  void* take(size_t rounded);
  // Keeps `block` for the stream's next allocation of `rounded` bytes. Where
  // that would pass kMaxCachedBytes, the blocks kept longest are let go into
  // `evicted` first: what the stream's present work frees and allocates
  // again stays, where a full cache that refused new blocks would keep, for
  // good, sizes that no longer come (a cuDNN tuning's workspaces, a shape
  // that ran once) and send every allocation after them to the pool.
  // The price: a loop that frees more than the cap between a block's free
  // and the next request of its size misses on every such block here,
  // where a refusing cache would have kept hitting on the blocks it froze.
  // Within a run, a compiled model frees each buffer soon after its last
  // use and asks for one of the same size soon after (its layers repeat),
  // a distance far under the cap.
  // False, with nothing evicted, for a block over the cap on its own.
  bool give(void* block, size_t rounded, std::vector<void*>* evicted);
  // Lets go of every kept block into `out`.
  void take_all(std::vector<void*>* out);
  size_t cached_bytes() const;

 private:
  struct Kept {
    void* block;
    size_t rounded;
  };
  using Age = std::list<Kept>;  // the oldest first

  // Takes `kept` out of both books; its node goes to spare_.
  void forget(Age::iterator kept);

  mutable std::mutex mutex_;
  Age by_age_;
  // The nodes of blocks taken, reused by later gives: in steady state a
  // give and a take allocate no host memory.
  Age spare_;
  // Each the oldest first. A vector, not a deque: a steady give and take
  // push and pop its back without freeing or allocating; only an eviction
  // (rare) erases its front.
  std::unordered_map<size_t, std::vector<Age::iterator>> by_size_;
  size_t cached_bytes_ = 0;
};

}  // namespace aotirt
