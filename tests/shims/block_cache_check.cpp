// The books of a stream's cache of freed device blocks
// (cuda_src/runtime/block_cache.h), on the host: the blocks are addresses
// that are never touched, so no GPU is needed. Run by
// tests/runtime/test_block_cache.py.
#include <cstdint>
#include <cstdio>
#include <random>
#include <utility>
#include <vector>

#include "runtime/block_cache.h"

namespace {

using aotirt::BlockCache;
constexpr size_t kMiB = size_t(1) << 20;
constexpr size_t kCap = BlockCache::kMaxCachedBytes;

int failures = 0;
int checks = 0;

void expect(bool ok, const char* what, long line) {
  ++checks;
  if (!ok) {
    std::printf("line %ld: %s\n", line, what);
    ++failures;
  }
}
#define EXPECT(cond) expect((cond), #cond, __LINE__)

void* block(uintptr_t n) { return reinterpret_cast<void*>(n * 4096); }

// The policy, written the plain way: every kept block in the order given.
struct Reference {
  std::vector<std::pair<void*, size_t>> kept;  // the oldest first
  size_t bytes = 0;
  void* take(size_t rounded) {
    for (size_t i = kept.size(); i-- > 0;)
      if (kept[i].second == rounded) {
        void* found = kept[i].first;
        bytes -= rounded;
        kept.erase(kept.begin() + static_cast<long>(i));
        return found;
      }
    return nullptr;
  }
  bool give(void* b, size_t rounded, std::vector<void*>* evicted) {
    if (rounded > kCap) return false;
    while (bytes + rounded > kCap) {
      evicted->push_back(kept.front().first);
      bytes -= kept.front().second;
      kept.erase(kept.begin());
    }
    kept.push_back({b, rounded});
    bytes += rounded;
    return true;
  }
};

void rounding() {
  EXPECT(BlockCache::round_up(1) == 512);
  EXPECT(BlockCache::round_up(512) == 512);
  EXPECT(BlockCache::round_up(513) == 1024);
  EXPECT(BlockCache::round_up(kMiB - 1) == kMiB);
  EXPECT(BlockCache::round_up(kMiB) == kMiB);
  EXPECT(BlockCache::round_up(kMiB + 1) == 2 * kMiB);
}

void reuse_by_size() {
  BlockCache cache;
  std::vector<void*> evicted;
  EXPECT(cache.take(512) == nullptr);
  EXPECT(cache.give(block(1), 512, &evicted));
  EXPECT(cache.give(block(2), 1024, &evicted));
  EXPECT(cache.give(block(3), 512, &evicted));
  EXPECT(cache.cached_bytes() == 2048);
  EXPECT(cache.take(2048) == nullptr);          // no block of that size
  EXPECT(cache.take(512) == block(3));          // the one given last first
  EXPECT(cache.take(512) == block(1));
  EXPECT(cache.take(512) == nullptr);
  EXPECT(cache.take(1024) == block(2));
  EXPECT(cache.cached_bytes() == 0);
  EXPECT(evicted.empty());
}

void over_the_cap_alone() {
  BlockCache cache;
  std::vector<void*> evicted;
  EXPECT(cache.give(block(1), 64 * kMiB, &evicted));
  EXPECT(!cache.give(block(2), kCap + kMiB, &evicted));  // the caller frees it
  EXPECT(evicted.empty());
  EXPECT(cache.cached_bytes() == 64 * kMiB);
  EXPECT(cache.give(block(3), kCap - 64 * kMiB, &evicted));  // exactly full: nothing goes
  EXPECT(evicted.empty());
  EXPECT(cache.cached_bytes() == kCap);
}

// The case the eviction is for: sizes that came once (a tuning's
// workspaces) fill the cache, then a steady loop frees and allocates a new
// size. The first give lets the oldest go; every allocation after it hits.
void stale_sizes_make_room() {
  BlockCache cache;
  std::vector<void*> evicted;
  for (uintptr_t i = 0; i < 4; ++i) EXPECT(cache.give(block(10 + i), 64 * kMiB, &evicted));
  EXPECT(cache.cached_bytes() == kCap);
  EXPECT(cache.give(block(20), 3 * kMiB, &evicted));
  EXPECT(evicted.size() == 1 && evicted[0] == block(10));  // only the oldest, only as much as needed
  evicted.clear();
  for (int step = 0; step < 100; ++step) {
    void* reused = cache.take(3 * kMiB);
    EXPECT(reused == block(20));
    EXPECT(cache.give(reused, 3 * kMiB, &evicted));
  }
  EXPECT(evicted.empty());
  // Larger blocks let the oldest go in order, as many as each needs; the
  // block the loop reused counts as new.
  EXPECT(cache.give(block(30), 100 * kMiB, &evicted));
  EXPECT(evicted.size() == 1 && evicted[0] == block(11));
  EXPECT(cache.cached_bytes() == 2 * 64 * kMiB + 3 * kMiB + 100 * kMiB);
  evicted.clear();
  EXPECT(cache.give(block(40), 150 * kMiB, &evicted));
  EXPECT(evicted.size() == 2 && evicted[0] == block(12) && evicted[1] == block(13));
  EXPECT(cache.cached_bytes() == 3 * kMiB + 100 * kMiB + 150 * kMiB);
  EXPECT(cache.take(3 * kMiB) == block(20));
}

void take_all_then_again() {
  BlockCache cache;
  std::vector<void*> evicted, all;
  EXPECT(cache.give(block(1), 512, &evicted));
  EXPECT(cache.give(block(2), 2 * kMiB, &evicted));
  cache.take_all(&all);
  EXPECT(all.size() == 2 && all[0] == block(1) && all[1] == block(2));
  EXPECT(cache.cached_bytes() == 0);
  EXPECT(cache.take(512) == nullptr);
  EXPECT(cache.give(block(3), 512, &evicted));  // reuses a node take_all set aside
  EXPECT(cache.take(512) == block(3));
  EXPECT(evicted.empty());
}

// Random gives and takes of a few sizes, some near the cap, against the
// plain policy: the same blocks come back and the same ones are let go.
void against_the_reference() {
  BlockCache cache;
  Reference reference;
  std::mt19937_64 rng(14);
  const size_t sizes[] = {512, 4096, kMiB, 3 * kMiB, 40 * kMiB, 97 * kMiB, 200 * kMiB};
  std::vector<void*> outstanding;  // allocated, not yet freed
  uintptr_t next = 1;
  int mismatches = 0;
  for (int step = 0; step < 200000 && mismatches < 5; ++step) {
    const size_t size = sizes[rng() % (sizeof sizes / sizeof sizes[0])];
    if (rng() % 2) {
      void* got = cache.take(size);
      void* want = reference.take(size);
      if (got != want) ++mismatches;
      if (!got) got = block(next++);  // the pool's fresh block
      outstanding.push_back(got);
    } else if (!outstanding.empty()) {
      const size_t which = rng() % outstanding.size();
      void* b = outstanding[which];
      outstanding.erase(outstanding.begin() + static_cast<long>(which));
      std::vector<void*> got_evicted, want_evicted;
      const bool got = cache.give(b, size, &got_evicted);
      const bool want = reference.give(b, size, &want_evicted);
      if (got != want || got_evicted != want_evicted) ++mismatches;
    }
    if (cache.cached_bytes() != reference.bytes || cache.cached_bytes() > kCap) ++mismatches;
  }
  EXPECT(mismatches == 0);
}

}  // namespace

int main() {
  rounding();
  reuse_by_size();
  over_the_cap_alone();
  stale_sizes_make_room();
  take_all_then_again();
  against_the_reference();
  std::printf("%d checks, %d failures\n", checks, failures);
  return failures != 0;
}
