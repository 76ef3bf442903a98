// Host-only check of cuda_src/runtime/copy_batch.h (built and run by
// tests/runtime/test_copy_batch.py; no GPU): that a launch's blocks share
// out every copy's bytes exactly once, in pieces of at most kChunkBytes that
// start on a 16-byte boundary of the copy, empty copies owning no block; the
// word each copy is moved in; and the batches the plan refuses.

#include <cstdint>
#include <string>
#include <vector>

#include "host_check.h"
#include "runtime/copy_batch.h"

namespace cb = aotirt::copy_batch;
using aotirt::ContiguousCopy;
using host_check::expect;

namespace {

// Plans `sizes` (fake addresses: only the sizes matter to the plan) and
// walks every block as the kernel does: each copy's bytes must be covered
// once, in order, by its own blocks.
void check_plan(const std::vector<size_t>& sizes, const std::string& what) {
  std::vector<ContiguousCopy> copies;
  for (size_t c = 0; c < sizes.size(); ++c)
    copies.push_back({reinterpret_cast<void*>(0x100000 * (c + 1)), reinterpret_cast<const void*>(0x900000 * (c + 1)),
                      sizes[c]});
  cb::Plan plan;
  if (!cb::plan_copies(copies.data(), copies.size(), &plan)) {
    expect(false, what + ": planned");
    return;
  }
  uint64_t expected_blocks = 0;
  for (size_t bytes : sizes) expected_blocks += (bytes + cb::kChunkBytes - 1) / cb::kChunkBytes;
  expect(plan.first_chunk[plan.count] == expected_blocks, what + ": the grid is one block per chunk");
  std::vector<size_t> covered(sizes.size(), 0);  // bytes of each copy covered so far, in order
  for (uint32_t block = 0; block < plan.first_chunk[plan.count]; ++block) {
    size_t begin = 0, end = 0;
    const uint32_t c = cb::chunk_span(plan, block, &begin, &end);
    const std::string where = what + ": block " + std::to_string(block);
    if (c >= sizes.size()) {
      expect(false, where + " names copy " + std::to_string(c));
      continue;
    }
    expect(sizes[c] > 0, where + " serves an empty copy");
    expect(begin == covered[c], where + " starts where the copy's last block ended");
    expect(begin % 16 == 0, where + " starts on a 16-byte boundary");
    expect(end > begin && end - begin <= cb::kChunkBytes && end <= sizes[c], where + " moves at most a chunk, inside");
    covered[c] = end;
  }
  for (size_t c = 0; c < sizes.size(); ++c)
    expect(covered[c] == sizes[c], what + ": copy " + std::to_string(c) + " covered whole");
}

void check_plans() {
  const size_t k = cb::kChunkBytes;
  check_plan({}, "no copies");
  check_plan({0}, "one empty copy");
  check_plan({1}, "one byte");
  check_plan({k - 1, k, k + 1}, "the chunk's edges");
  check_plan({0, 3 * k, 0, 0, 17, 0}, "empty copies between and at the ends");
  check_plan({512 * 1024, 256 * 1024, 512 * 1024, 131072}, "sdpa_bf16's four inputs");
  check_plan({7 * k + 5, 2, 0, 100 * k}, "odd sizes");
  std::vector<size_t> full;
  for (size_t c = 0; c < cb::kCopiesPerLaunch; ++c) full.push_back((c % 3) * k + c * 7);
  check_plan(full, "a full launch");
}

void check_refusals() {
  std::vector<ContiguousCopy> copies(cb::kCopiesPerLaunch + 1, ContiguousCopy{nullptr, nullptr, 16});
  cb::Plan plan;
  expect(!cb::plan_copies(copies.data(), copies.size(), &plan), "more copies than a launch holds: refused");
  expect(cb::plan_copies(copies.data(), cb::kCopiesPerLaunch, &plan), "a full launch: planned");
  // (2^31 - 1) blocks is the grid's limit: one chunk over it is refused.
  const size_t limit = ((uint64_t(1) << 31) - 1) * cb::kChunkBytes;
  ContiguousCopy huge{nullptr, nullptr, limit};
  expect(cb::plan_copies(&huge, 1, &plan), "exactly the grid's limit: planned");
  ContiguousCopy two[2] = {huge, {nullptr, nullptr, 1}};
  expect(!cb::plan_copies(two, 2, &plan), "one block past the grid's limit: refused");
}

void check_words() {
  auto at = [](uintptr_t address) { return reinterpret_cast<void*>(address); };
  expect(cb::word_bytes(at(0x1000), at(0x2000)) == 16, "both 16-byte aligned: 16");
  expect(cb::word_bytes(at(0x1008), at(0x2000)) == 8, "one 8-byte aligned: 8");
  expect(cb::word_bytes(at(0x1000), at(0x2004)) == 4, "one 4-byte aligned: 4");
  expect(cb::word_bytes(at(0x1002), at(0x2000)) == 2, "one 2-byte aligned: 2");
  expect(cb::word_bytes(at(0x1001), at(0x2000)) == 1, "one odd: bytes");
  expect(cb::word_bytes(at(0x1004), at(0x200c)) == 4, "both 4 from 16: 4");
}

}  // namespace

int main() {
  check_plans();
  check_refusals();
  check_words();
  return host_check::finish();
}
