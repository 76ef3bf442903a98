#include "runtime/block_cache.h"

#include <algorithm>

namespace aotirt {

size_t BlockCache::round_up(size_t nbytes) {
  if (nbytes == 0) return kGranule;
  return (nbytes + kGranule - 1) / kGranule * kGranule;
}

size_t BlockCache::segment_size_for(size_t rounded) {
  if (rounded <= kMaxSmallRequest) return kSmallSegment;
  if (rounded <= kMaxMediumRequest) return kMediumSegment;
  return (rounded + kLargeSegmentStep - 1) / kLargeSegmentStep * kLargeSegmentStep;
}

size_t BlockCache::find_block(uintptr_t address) const {
  auto it = std::lower_bound(blocks_.begin(), blocks_.end(), address,
                             [](const Block& block, uintptr_t a) { return block.address < a; });
  if (it == blocks_.end() || it->address != address) return blocks_.size();
  return static_cast<size_t>(it - blocks_.begin());
}

void BlockCache::add_free(const Block& block) {
  std::vector<FreeKey>& list = free_list(segments_[block.segment].small);
  FreeKey key{block.size, block.address};
  list.insert(std::lower_bound(list.begin(), list.end(), key), key);
}

void BlockCache::remove_free(const Block& block) {
  std::vector<FreeKey>& list = free_list(segments_[block.segment].small);
  FreeKey key{block.size, block.address};
  auto it = std::lower_bound(list.begin(), list.end(), key);
  if (it != list.end() && it->size == key.size && it->address == key.address) list.erase(it);
}

void* BlockCache::take(size_t rounded) {
  std::lock_guard<std::mutex> lock(mutex_);
  return take_locked(rounded);
}

void* BlockCache::take_locked(size_t rounded) {
  std::vector<FreeKey>& list = free_list(is_small(rounded));
  auto fit = std::lower_bound(list.begin(), list.end(), FreeKey{rounded, 0});
  if (fit == list.end()) return nullptr;
  const size_t index = find_block(fit->address);
  list.erase(fit);
  return serve(index, rounded);
}

void* BlockCache::serve(size_t index, size_t rounded) {
  Block& block = blocks_[index];
  const size_t rest = block.size - rounded;
  // A large block keeps a remainder of 1 MiB or less: split off, it could
  // only serve small requests, which large segments do not serve.
  const bool split = segments_[block.segment].small ? rest >= kGranule : rest > kMaxSmallRequest;
  if (split) {
    block.size = rounded;
    Block remainder{block.address + rounded, rest, block.segment, true};
    blocks_.insert(blocks_.begin() + static_cast<std::ptrdiff_t>(index) + 1, remainder);
    add_free(remainder);
  }
  Block& taken = blocks_[index];  // the insert may have moved it
  taken.free = false;
  segments_[taken.segment].blocks_in_use += 1;
  cached_bytes_ -= taken.size;
  return reinterpret_cast<void*>(taken.address);
}

void* BlockCache::take_from_new_segment(void* segment, size_t segment_bytes, size_t rounded) {
  if (!segment || segment_bytes < rounded) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  uint32_t slot = 0;
  while (slot < segments_.size() && segments_[slot].live) ++slot;
  if (slot == segments_.size()) segments_.emplace_back();
  Segment& s = segments_[slot];
  s = Segment{};
  s.base = reinterpret_cast<uintptr_t>(segment);
  s.size = segment_bytes;
  s.small = is_small(rounded);
  s.live = true;
  auto at = std::lower_bound(blocks_.begin(), blocks_.end(), s.base,
                             [](const Block& block, uintptr_t a) { return block.address < a; });
  const size_t index = static_cast<size_t>(at - blocks_.begin());
  blocks_.insert(at, Block{s.base, segment_bytes, slot, true});
  cached_bytes_ += segment_bytes;
  segment_bytes_ += segment_bytes;
  segment_count_ += 1;
  return serve(index, rounded);
}

bool BlockCache::give(void* pointer, std::vector<void*>* released) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t index = find_block(reinterpret_cast<uintptr_t>(pointer));
  if (index == blocks_.size() || blocks_[index].free) return false;
  const uint32_t segment = blocks_[index].segment;
  blocks_[index].free = true;
  cached_bytes_ += blocks_[index].size;
  Segment& owner = segments_[segment];
  owner.blocks_in_use -= 1;
  ++gives_;
  if (owner.blocks_in_use == 0) owner.free_since = gives_;
  // Merge with free neighbours of the same segment (the list is by address,
  // so neighbours in it are neighbours in memory).
  if (index + 1 < blocks_.size() && blocks_[index + 1].segment == segment && blocks_[index + 1].free) {
    remove_free(blocks_[index + 1]);
    blocks_[index].size += blocks_[index + 1].size;
    blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(index) + 1);
  }
  if (index > 0 && blocks_[index - 1].segment == segment && blocks_[index - 1].free) {
    remove_free(blocks_[index - 1]);
    blocks_[index - 1].size += blocks_[index].size;
    blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(index));
    index -= 1;
  }
  add_free(blocks_[index]);
  if (cached_bytes_ > kMaxCachedBytes) release_segments_over(kMaxCachedBytes, released);
  return true;
}

void BlockCache::release_free_segments(std::vector<void*>* released) {
  std::lock_guard<std::mutex> lock(mutex_);
  release_segments_over(0, released);
}

void BlockCache::release_segments_over(size_t keep_at_most, std::vector<void*>* released) {
  while (cached_bytes_ > keep_at_most) {
    uint32_t oldest = 0;
    bool found = false;
    for (uint32_t s = 0; s < segments_.size(); ++s) {
      const Segment& seg = segments_[s];
      if (!seg.live || seg.blocks_in_use != 0) continue;
      if (!found || seg.free_since < segments_[oldest].free_since) oldest = s;
      found = true;
    }
    if (!found) return;
    release_segment(oldest, released);
  }
}

void BlockCache::release_segment(uint32_t segment, std::vector<void*>* released) {
  Segment& seg = segments_[segment];
  // Wholly free, so merged into one block that starts at its base.
  const size_t index = find_block(seg.base);
  remove_free(blocks_[index]);
  blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(index));
  cached_bytes_ -= seg.size;
  segment_bytes_ -= seg.size;
  segment_count_ -= 1;
  seg.live = false;
  released->push_back(reinterpret_cast<void*>(seg.base));
}

size_t BlockCache::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_bytes_;
}

size_t BlockCache::segment_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return segment_bytes_;
}

size_t BlockCache::segment_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return segment_count_;
}

}  // namespace aotirt
