// Several contiguous copies within one GPU as one kernel launch: a graph
// replay's inputs, copied into its static inputs.
//
// Why not a cudaMemcpyAsync each: every one is an operation of its own on
// the stream, copy-engine work between the SMs' kernels. Measured on an
// H100 (bench/runs/s30-h100-check.md, bench/probe_replay.py), a replay of
// four attention inputs took 29.9 us of GPU time with a cudaMemcpyAsync
// each and 26.3 with one kernel (of 64 KiB blocks); a replay of two, 15.3
// and 13.9. But one small input alone was cheaper by cudaMemcpyAsync (7.8
// against 8.6 us a replay), so a lone copy still goes that way.
//
// The plan (which block copies what) is a pure function, checked on the host
// by tests/shims/copy_batch_check.cpp; copy_batch.cu launches it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "aotirt/aotirt.h"

// Used by the kernel and by the host check alike.
#ifdef __CUDACC__
#define AOTIRT_COPY_BATCH_HD __host__ __device__ __forceinline__
#else
#define AOTIRT_COPY_BATCH_HD inline
#endif

namespace aotirt {

struct ContiguousCopy {
  void* dst;
  const void* src;
  size_t bytes;
};

namespace copy_batch {

// Each block of the kernel copies one chunk of one copy: kChunkBytes, or a
// copy's last, shorter piece. A multiple of the widest word (16 bytes), so
// that every chunk of an aligned copy starts aligned. 16 KiB: four 16-byte
// words a thread of 256, so that a replay's few megabytes spread over the
// SMs (64 KiB blocks gave sdpa_bf16's 1.75 MB 28 blocks on 132 SMs, 4.7 us).
constexpr size_t kChunkBytes = size_t(16) << 10;
// Copies per launch: the launch's parameters hold the plan by value (904
// bytes at 32, under the 4 KiB every architecture takes).
constexpr size_t kCopiesPerLaunch = 32;

// Which chunks are whose: copy c owns blocks first_chunk[c] up to
// first_chunk[c + 1]; first_chunk[count] is the grid's size.
struct Plan {
  ContiguousCopy copies[kCopiesPerLaunch];
  uint32_t first_chunk[kCopiesPerLaunch + 1];
  uint32_t count;
};

AOTIRT_COPY_BATCH_HD size_t chunks_of(size_t bytes) { return (bytes + kChunkBytes - 1) / kChunkBytes; }

// Plans copies[0 .. count) (count at most kCopiesPerLaunch) into `plan`.
// False where the chunks would not fit a grid's x dimension (2^31 - 1
// blocks: 128 TiB at once); `plan` is then unusable.
inline bool plan_copies(const ContiguousCopy* copies, size_t count, Plan* plan) {
  if (count > kCopiesPerLaunch) return false;
  constexpr uint64_t kMaxBlocks = (uint64_t(1) << 31) - 1;
  uint64_t total = 0;
  plan->count = static_cast<uint32_t>(count);
  for (size_t c = 0; c < count; ++c) {
    plan->copies[c] = copies[c];
    plan->first_chunk[c] = static_cast<uint32_t>(total);
    total += chunks_of(copies[c].bytes);
    if (total > kMaxBlocks) return false;
  }
  plan->first_chunk[count] = static_cast<uint32_t>(total);
  return true;
}

// The copy that block `chunk` of a launch serves, and the bytes of it that
// the block moves, [*begin, *end): the copy's chunk-th piece of kChunkBytes
// counted from its first block (first_chunk is nondecreasing: an empty copy
// owns no block and is stepped over).
AOTIRT_COPY_BATCH_HD uint32_t chunk_span(const Plan& plan, uint32_t chunk, size_t* begin, size_t* end) {
  uint32_t c = 0;
  while (c + 1 < plan.count && chunk >= plan.first_chunk[c + 1]) ++c;
  *begin = static_cast<size_t>(chunk - plan.first_chunk[c]) * kChunkBytes;
  const size_t bytes = plan.copies[c].bytes;
  *end = *begin + kChunkBytes < bytes ? *begin + kChunkBytes : bytes;
  return c;
}

// The widest word (16, 8, 4, 2 or 1 bytes) that both addresses are aligned
// to: the kernel moves a copy's chunks in words of that size, and the bytes
// past its last whole word one at a time.
AOTIRT_COPY_BATCH_HD size_t word_bytes(const void* dst, const void* src) {
  const uintptr_t both = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src);
  size_t word = 16;
  while (word > 1 && both % word != 0) word /= 2;
  return word;
}

}  // namespace copy_batch

// Queues dst <- src for every one of `copies` on `stream`: one launch for
// each kCopiesPerLaunch of them, a group of one by cudaMemcpyAsync instead
// (cheaper for one, above), nothing for a copy of 0 bytes. Every dst
// must be apart from every src and every other dst: the copies run at once.
// The stream must already be ordered after each src's producer (use_on).
aotirt_status copy_contiguous_batch(const ContiguousCopy* copies, size_t count, aotirt_stream* stream);

}  // namespace aotirt
