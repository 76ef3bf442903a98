#include "runtime/block_cache.h"

namespace aotirt {

size_t BlockCache::round_up(size_t nbytes) {
  constexpr size_t kSmall = 512;
  constexpr size_t kLarge = size_t(1) << 20;
  size_t step = nbytes < kLarge ? kSmall : kLarge;
  return (nbytes + step - 1) / step * step;
}

void BlockCache::forget(Age::iterator kept) {
  cached_bytes_ -= kept->rounded;
  spare_.splice(spare_.end(), by_age_, kept);
}

void* BlockCache::take(size_t rounded) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_size_.find(rounded);
  if (it == by_size_.end() || it->second.empty()) return nullptr;
  // The one given last: its memory is the likeliest still in the GPU's L2.
  Age::iterator kept = it->second.back();
  it->second.pop_back();
  void* block = kept->block;
  forget(kept);
  return block;
}

bool BlockCache::give(void* block, size_t rounded, std::vector<void*>* evicted) {
  if (rounded > kMaxCachedBytes) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  while (cached_bytes_ + rounded > kMaxCachedBytes) {
    Age::iterator oldest = by_age_.begin();
    // The oldest of a size is the front of that size's list too.
    std::vector<Age::iterator>& same_size = by_size_[oldest->rounded];
    same_size.erase(same_size.begin());
    evicted->push_back(oldest->block);
    forget(oldest);
  }
  if (spare_.empty()) {
    by_age_.push_back(Kept{block, rounded});
  } else {
    spare_.front() = Kept{block, rounded};
    by_age_.splice(by_age_.end(), spare_, spare_.begin());
  }
  by_size_[rounded].push_back(std::prev(by_age_.end()));
  cached_bytes_ += rounded;
  return true;
}

void BlockCache::take_all(std::vector<void*>* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Kept& kept : by_age_) out->push_back(kept.block);
  spare_.splice(spare_.end(), by_age_);
  by_size_.clear();
  cached_bytes_ = 0;
}

size_t BlockCache::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_bytes_;
}

}  // namespace aotirt
