// A per-stream cache of device memory, in front of the CUDA pool.
//
// Memory freed on a stream can be handed to the next allocation on the same
// stream at once: the stream itself orders the new user after the old one,
// so no event and no host wait is needed. A steady-state run then queues only
// its kernels, instead of a cudaMallocAsync and a cudaFreeAsync per tensor
// (each one more operation for the host to issue and the GPU to process).
//
// How it packs memory, and why. The cache takes memory from the pool in
// segments (2 MiB for requests up to 1 MiB, 20 MiB for requests up to
// 10 MiB, the request rounded up to 2 MiB above that) and serves each request
// from the smallest free block that fits (best fit, the lowest address among
// equals), splitting off what is left and merging a freed block with free
// neighbours of its segment. Small and large requests use separate segments,
// so small tensors do not cut up the large blocks. This is how the pool
// itself and torch's caching allocator serve memory. An earlier cache kept
// each rounded size apart and handed a block only to a request of exactly
// its size; a model's tensors then spread over more memory, and on an H100
// the Triton kernels reading them ran 4 to 9 us a call slower than the same
// kernels on memory packed this way (bench/runs/s34-h100-trace.md).
//
// Over kMaxCachedBytes of free memory, whole free segments go back to the
// pool, the longest free first: sizes that came once (a cuDNN tuning's
// workspaces, a shape that ran once) do not keep memory from other streams.
//
// The cache only keeps the books and never calls CUDA: it tells its caller
// which segments to ask the pool for and which to free, stream-ordered on the
// stream whose cache it is. Its books are sorted vectors that keep their
// capacity, so a steady state (the same requests every call) allocates no
// host memory either.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace aotirt {

class BlockCache {
 public:
  // Free memory kept before whole free segments go back to the pool.
  static constexpr size_t kMaxCachedBytes = size_t(256) << 20;
  // Every request is served in multiples of this (and every block is aligned
  // to it, segments being aligned more).
  static constexpr size_t kGranule = 512;
  static constexpr size_t kMaxSmallRequest = size_t(1) << 20;
  static constexpr size_t kSmallSegment = size_t(2) << 20;
  static constexpr size_t kMaxMediumRequest = size_t(10) << 20;
  static constexpr size_t kMediumSegment = size_t(20) << 20;
  static constexpr size_t kLargeSegmentStep = size_t(2) << 20;

  // The size a request of `nbytes` is served at: a multiple of kGranule.
  static size_t round_up(size_t nbytes);
  // The segment to ask the pool for when take(rounded) finds nothing.
  static size_t segment_size_for(size_t rounded);

  BlockCache() = default;
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // A block of `rounded` bytes (from round_up) from free memory, or nullptr
  // when no free block fits.
  void* take(size_t rounded);
  // Adds `segment` (`segment_bytes` from the pool, on this stream) to the
  // cache and serves `rounded` bytes from it: returns the block's address.
  void* take_from_new_segment(void* segment, size_t segment_bytes, size_t rounded);
  // Frees `block`, a block take or take_from_new_segment gave. Where that
  // leaves more than kMaxCachedBytes free, whole free segments go into
  // `released` (the caller frees them to the pool), the longest free first.
  // False when `block` is not a block this cache gave out (nothing changes).
  bool give(void* block, std::vector<void*>* released);
  // Every wholly free segment goes into `released`: after an allocation
  // failed, and when the stream ends (then every segment is free).
  void release_free_segments(std::vector<void*>* released);

  size_t cached_bytes() const;   // free bytes held
  size_t segment_bytes() const;  // all the bytes held, free or in use
  size_t segment_count() const;

 private:
  struct Block {
    uintptr_t address;
    size_t size;
    uint32_t segment;  // index into segments_
    bool free;
  };
  struct Segment {
    uintptr_t base = 0;
    size_t size = 0;
    size_t blocks_in_use = 0;
    uint64_t free_since = 0;  // give() count when it last became wholly free
    bool small = false;
    bool live = false;
  };
  struct FreeKey {
    size_t size;
    uintptr_t address;
    bool operator<(const FreeKey& other) const {
      return size != other.size ? size < other.size : address < other.address;
    }
  };

  static bool is_small(size_t rounded) { return rounded <= kMaxSmallRequest; }
  std::vector<FreeKey>& free_list(bool small) { return small ? free_small_ : free_large_; }

  void* take_locked(size_t rounded);
  // Serves `rounded` bytes from blocks_[index], a free block already out of
  // its free list: splits off the rest where worth it.
  void* serve(size_t index, size_t rounded);
  size_t find_block(uintptr_t address) const;  // index in blocks_, or blocks_.size()
  void add_free(const Block& block);
  void remove_free(const Block& block);
  // Releases wholly free segments, the longest free first, while the free
  // bytes are over `keep_at_most`.
  void release_segments_over(size_t keep_at_most, std::vector<void*>* released);
  void release_segment(uint32_t segment, std::vector<void*>* released);

  mutable std::mutex mutex_;
  std::vector<Block> blocks_;  // every block, free or not, by address
  std::vector<FreeKey> free_small_, free_large_;  // free blocks, sorted
  std::vector<Segment> segments_;                 // slots of released segments are reused
  size_t cached_bytes_ = 0;
  size_t segment_bytes_ = 0;
  size_t segment_count_ = 0;
  uint64_t gives_ = 0;
};

}  // namespace aotirt
