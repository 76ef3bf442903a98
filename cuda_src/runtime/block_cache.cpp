#include "runtime/block_cache.h"

namespace aotirt {

size_t BlockCache::round_up(size_t nbytes) {
  constexpr size_t kSmall = 512;
  constexpr size_t kLarge = size_t(1) << 20;
  size_t step = nbytes < kLarge ? kSmall : kLarge;
  return (nbytes + step - 1) / step * step;
}

void* BlockCache::take(size_t rounded) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = free_.find(rounded);
  if (it == free_.end() || it->second.empty()) return nullptr;
  void* block = it->second.back();
  it->second.pop_back();
  cached_bytes_ -= rounded;
  return block;
}

bool BlockCache::give(void* block, size_t rounded) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cached_bytes_ + rounded > kMaxCachedBytes) return false;
  free_[rounded].push_back(block);
  cached_bytes_ += rounded;
  return true;
}

void BlockCache::release_all(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [size, blocks] : free_)
    for (void* block : blocks) cudaFreeAsync(block, stream);
  free_.clear();
  cached_bytes_ = 0;
}

}  // namespace aotirt
