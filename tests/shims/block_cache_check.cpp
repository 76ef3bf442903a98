// The books of a stream's cache of device memory
// (cuda_src/runtime/block_cache.h), on the host: segments are addresses that
// are never touched, so no GPU is needed. Run by
// tests/runtime/test_block_cache.py.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <tuple>
#include <vector>

#include "runtime/block_cache.h"

namespace {

using aotirt::BlockCache;
constexpr size_t kKiB = size_t(1) << 10;
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

// Segment addresses: far apart, so that no two are ever adjacent.
void* segment(uintptr_t n) { return reinterpret_cast<void*>(n << 40); }
void* at(void* base, size_t offset) { return static_cast<char*>(base) + offset; }

// Takes `rounded` bytes, asking the "pool" for a segment (the next address
// of `next_segment`) on a miss, as tensor.cpp does.
void* allocate(BlockCache& cache, size_t rounded, uintptr_t* next_segment) {
  if (void* hit = cache.take(rounded)) return hit;
  return cache.take_from_new_segment(segment((*next_segment)++), BlockCache::segment_size_for(rounded), rounded);
}

// The policy, written the plain way: each segment a list of blocks by
// offset; every search a scan.
struct Reference {
  struct Block {
    size_t offset, size;
    bool free;
  };
  struct Segment {
    uintptr_t base;
    size_t size;
    bool small;
    uint64_t free_since;
    std::vector<Block> blocks;
  };
  std::vector<Segment> segments;
  uint64_t gives = 0;
  size_t free_bytes = 0;

  static bool small_request(size_t rounded) { return rounded <= BlockCache::kMaxSmallRequest; }

  void* serve(Segment& seg, size_t which, size_t rounded) {
    Block& block = seg.blocks[which];
    const size_t rest = block.size - rounded;
    const bool split = seg.small ? rest >= BlockCache::kGranule : rest > BlockCache::kMaxSmallRequest;
    const size_t offset = block.offset;
    block.free = false;
    if (split) {
      block.size = rounded;
      seg.blocks.insert(seg.blocks.begin() + static_cast<long>(which) + 1, Block{offset + rounded, rest, true});
    }
    free_bytes -= seg.blocks[which].size;
    return reinterpret_cast<void*>(seg.base + offset);
  }
  void* take(size_t rounded) {
    Segment* best_segment = nullptr;
    size_t best_block = 0;
    std::tuple<size_t, uintptr_t> best{SIZE_MAX, 0};
    for (Segment& seg : segments) {
      if (seg.small != small_request(rounded)) continue;
      for (size_t i = 0; i < seg.blocks.size(); ++i) {
        const Block& b = seg.blocks[i];
        std::tuple<size_t, uintptr_t> key{b.size, seg.base + b.offset};
        if (b.free && b.size >= rounded && key < best) {
          best = key;
          best_segment = &seg;
          best_block = i;
        }
      }
    }
    return best_segment ? serve(*best_segment, best_block, rounded) : nullptr;
  }
  void* take_from_new_segment(void* base, size_t size, size_t rounded) {
    segments.push_back(Segment{reinterpret_cast<uintptr_t>(base), size, small_request(rounded), 0, {{0, size, true}}});
    free_bytes += size;
    return serve(segments.back(), 0, rounded);
  }
  bool in_use(const Segment& seg) const {
    for (const Block& b : seg.blocks)
      if (!b.free) return true;
    return false;
  }
  bool give(void* pointer, std::vector<void*>* released) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
    for (Segment& seg : segments) {
      for (size_t i = 0; i < seg.blocks.size(); ++i) {
        if (seg.base + seg.blocks[i].offset != address || seg.blocks[i].free) continue;
        seg.blocks[i].free = true;
        free_bytes += seg.blocks[i].size;
        ++gives;
        // Merge every run of free neighbours (at most three blocks).
        std::vector<Block> merged;
        for (const Block& b : seg.blocks) {
          if (!merged.empty() && merged.back().free && b.free)
            merged.back().size += b.size;
          else
            merged.push_back(b);
        }
        seg.blocks = merged;
        if (!in_use(seg)) seg.free_since = gives;
        release_over(kCap, released);
        return true;
      }
    }
    return false;
  }
  void release_over(size_t keep, std::vector<void*>* released) {
    while (free_bytes > keep) {
      auto oldest = segments.end();
      for (auto it = segments.begin(); it != segments.end(); ++it)
        if (!in_use(*it) && (oldest == segments.end() || it->free_since < oldest->free_since)) oldest = it;
      if (oldest == segments.end()) return;
      free_bytes -= oldest->size;
      released->push_back(reinterpret_cast<void*>(oldest->base));
      segments.erase(oldest);
    }
  }
};

void rounding_and_segments() {
  EXPECT(BlockCache::round_up(0) == 512);
  EXPECT(BlockCache::round_up(1) == 512);
  EXPECT(BlockCache::round_up(512) == 512);
  EXPECT(BlockCache::round_up(513) == 1024);
  EXPECT(BlockCache::round_up(kMiB + 1) == kMiB + 512);
  EXPECT(BlockCache::segment_size_for(512) == 2 * kMiB);
  EXPECT(BlockCache::segment_size_for(kMiB) == 2 * kMiB);
  EXPECT(BlockCache::segment_size_for(kMiB + 512) == 20 * kMiB);
  EXPECT(BlockCache::segment_size_for(10 * kMiB) == 20 * kMiB);
  EXPECT(BlockCache::segment_size_for(10 * kMiB + 512) == 12 * kMiB);
  EXPECT(BlockCache::segment_size_for(64 * kMiB) == 64 * kMiB);
}

// Small requests are packed into one segment, back to back, and freed
// neighbours merge into one block again.
void split_and_merge() {
  BlockCache cache;
  std::vector<void*> released;
  EXPECT(cache.take(512) == nullptr);
  void* base = segment(1);
  void* a = cache.take_from_new_segment(base, 2 * kMiB, 512);
  EXPECT(a == base);
  void* b = cache.take(4 * kKiB);
  void* c = cache.take(512);
  EXPECT(b == at(base, 512));
  EXPECT(c == at(base, 512 + 4 * kKiB));
  EXPECT(cache.cached_bytes() == 2 * kMiB - 5 * kKiB);
  EXPECT(cache.give(b, &released));
  EXPECT(!cache.give(b, &released));              // given twice: refused
  EXPECT(!cache.give(at(base, 256), &released));  // not a block's start
  // The 4 KiB hole is the best fit for 1 KiB (the tail is larger).
  void* d = cache.take(kKiB);
  EXPECT(d == at(base, 512));
  EXPECT(cache.give(a, &released));
  EXPECT(cache.give(c, &released));
  EXPECT(cache.give(d, &released));
  EXPECT(cache.cached_bytes() == 2 * kMiB);
  EXPECT(cache.segment_count() == 1);
  EXPECT(released.empty());  // under the cap: kept
  // Merged back whole: a request of the segment's size fits.
  EXPECT(cache.take(kMiB) == base);
  EXPECT(cache.take(kMiB) == at(base, kMiB));
  EXPECT(cache.take(512) == nullptr);
}

// Large requests never come from small segments, nor small from large; a
// large block's remainder of 1 MiB or less stays with it.
void small_and_large_apart() {
  BlockCache cache;
  std::vector<void*> released;
  void* small_base = segment(1);
  void* large_base = segment(2);
  void* s = cache.take_from_new_segment(small_base, 2 * kMiB, 512);
  EXPECT(cache.take(kMiB + 512) == nullptr);  // 2 MiB minus 512 free, but small
  void* l = cache.take_from_new_segment(large_base, 20 * kMiB, 19 * kMiB + 512);
  EXPECT(l == large_base);
  EXPECT(cache.cached_bytes() == (2 * kMiB - 512));  // the large remainder (1 MiB - 512) was not split
  EXPECT(cache.give(l, &released));
  EXPECT(cache.take(512) == at(small_base, 512));  // from the small segment
  void* l2 = cache.take(2 * kMiB);
  EXPECT(l2 == large_base);
  EXPECT(cache.take(18 * kMiB) == at(large_base, 2 * kMiB));
  EXPECT(cache.give(s, &released));
  EXPECT(released.empty());
}

// Over the cap, wholly free segments go back, the one free longest first,
// only as many as needed; segments with a block in use stay.
void release_over_the_cap() {
  BlockCache cache;
  std::vector<void*> released;
  std::vector<void*> blocks;
  for (uintptr_t i = 0; i < 5; ++i) blocks.push_back(cache.take_from_new_segment(segment(10 + i), 100 * kMiB, 100 * kMiB));
  EXPECT(cache.segment_bytes() == 500 * kMiB);
  EXPECT(cache.cached_bytes() == 0);
  EXPECT(cache.give(blocks[3], &released));
  EXPECT(cache.give(blocks[1], &released));
  EXPECT(released.empty());  // 200 MiB free
  EXPECT(cache.give(blocks[0], &released));
  EXPECT(released.size() == 1 && released[0] == segment(13));  // free longest
  released.clear();
  EXPECT(cache.give(blocks[4], &released));
  EXPECT(released.size() == 1 && released[0] == segment(11));
  EXPECT(cache.cached_bytes() == 200 * kMiB);
  EXPECT(cache.segment_bytes() == 300 * kMiB);
  // A request that fits a free segment is served from it.
  void* again = cache.take(60 * kMiB);
  EXPECT(again == segment(10));
  released.clear();
  cache.release_free_segments(&released);  // the OOM path: segment 14 only
  EXPECT(released.size() == 1 && released[0] == segment(14));
  EXPECT(cache.give(again, &released));
  EXPECT(cache.give(blocks[2], &released));
  released.clear();
  cache.release_free_segments(&released);  // the stream's end: all
  EXPECT(released.size() == 2);
  EXPECT(cache.segment_bytes() == 0 && cache.cached_bytes() == 0 && cache.segment_count() == 0);
  // Slots of released segments are reused.
  EXPECT(cache.take_from_new_segment(segment(20), 2 * kMiB, 512) == segment(20));
  EXPECT(cache.segment_count() == 1);
}

// A segment smaller than the request, or none, is refused.
void bad_segments() {
  BlockCache cache;
  EXPECT(cache.take_from_new_segment(nullptr, 2 * kMiB, 512) == nullptr);
  EXPECT(cache.take_from_new_segment(segment(1), kMiB, 2 * kMiB) == nullptr);
  EXPECT(cache.segment_count() == 0);
}

// Random takes and gives over a spread of sizes, some near the cap, against
// the plain policy: the same addresses, the same free bytes, the same
// segments released.
void against_the_reference() {
  BlockCache cache;
  Reference reference;
  std::mt19937_64 rng(14);
  const size_t sizes[] = {512, 1536, 4 * kKiB, 96 * kKiB, kMiB, kMiB + 512, 3 * kMiB, 9 * kMiB + 512,
                          10 * kMiB, 40 * kMiB, 97 * kMiB, 200 * kMiB};
  std::vector<void*> outstanding;
  uintptr_t next_segment = 1;
  int mismatches = 0;
  for (int step = 0; step < 100000 && mismatches < 5; ++step) {
    if (rng() % 2) {
      const size_t size = sizes[rng() % (sizeof sizes / sizeof sizes[0])];
      void* got = cache.take(size);
      void* want = reference.take(size);
      if (!got) {
        void* base = segment(next_segment++);
        got = cache.take_from_new_segment(base, BlockCache::segment_size_for(size), size);
        if (!want) want = reference.take_from_new_segment(base, BlockCache::segment_size_for(size), size);
      }
      if (got != want) ++mismatches;
      outstanding.push_back(got);
    } else if (!outstanding.empty()) {
      const size_t which = rng() % outstanding.size();
      void* b = outstanding[which];
      outstanding.erase(outstanding.begin() + static_cast<long>(which));
      std::vector<void*> got_released, want_released;
      const bool got = cache.give(b, &got_released);
      const bool want = reference.give(b, &want_released);
      if (!got || !want || got_released != want_released) ++mismatches;
    }
    if (cache.cached_bytes() != reference.free_bytes) ++mismatches;
  }
  EXPECT(mismatches == 0);
  // Everything given back: every segment is whole again and goes.
  std::vector<void*> released;
  for (void* b : outstanding) EXPECT(cache.give(b, &released));
  released.clear();
  cache.release_free_segments(&released);
  EXPECT(cache.segment_count() == 0 && cache.cached_bytes() == 0);
}

// A steady loop (a model's call: the same sizes in the same order) after
// the first pass takes no new segment and releases none.
void steady_state() {
  BlockCache cache;
  uintptr_t next_segment = 1;
  const size_t call[] = {802816, 802816, 200704, 200704, 401408, 100352, 4 * kMiB, 512, 25088};
  std::vector<void*> released;
  for (int pass = 0; pass < 50; ++pass) {
    const uintptr_t before = next_segment;
    std::vector<void*> live;
    for (size_t i = 0; i < sizeof call / sizeof call[0]; ++i) {
      live.push_back(allocate(cache, BlockCache::round_up(call[i]), &next_segment));
      // A layer's input goes once the next layer has run.
      if (live.size() > 2) {
        EXPECT(cache.give(live[live.size() - 3], &released));
        live[live.size() - 3] = nullptr;
      }
    }
    for (void* b : live)
      if (b) EXPECT(cache.give(b, &released));
    if (pass > 0) EXPECT(next_segment == before);
  }
  EXPECT(released.empty());
}

}  // namespace

int main() {
  rounding_and_segments();
  split_and_merge();
  small_and_large_apart();
  release_over_the_cap();
  bad_segments();
  against_the_reference();
  steady_state();
  std::printf("%d checks, %d failures\n", checks, failures);
  return failures != 0;
}
