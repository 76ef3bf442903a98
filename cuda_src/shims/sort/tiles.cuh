// The block sort behind short lines and top-k selection: each thread block
// sorts one tile of at most kThreads * kItems elements of one line with
// CUB's BlockRadixSort in shared memory, keys (sort_keys.cuh: torch's
// order, NaN largest) carrying their positions along the line, and writes
// the tile's first `keep` elements somewhere (a Sink).
//
// Why it gives exactly the stable order: BlockRadixSort is stable (CCCL's
// block_radix_sort.cuh), and the tile is loaded in a blocked arrangement
// (thread t holds elements t * kItems ... t * kItems + kItems - 1), so the
// block's own order is the tile's order. A tile shorter than the block is
// padded with the largest key; the padding sits after every real element
// and the sort is stable, so the padding sorts after every element it ties
// with and the tile's elements are the first `length` ranks.
//
// Sources (where a tile's keys come from) and sinks (where the first keep
// go) are small structs with a per-line view, so one kernel serves:
//  - InputSource -> OutputSink: a line sorted whole (lines up to a block);
//  - InputSource -> CandidateSink: a tile of a longer line reduced to its
//    first k (top-k selection, first round);
//  - CandidateSource -> CandidateSink / OutputSink: later rounds and the
//    final sort of a line's candidates.
// Candidates are (key, position) pairs, each line's stored tile after tile,
// each tile's in its sorted order. Equal keys therefore lie in position
// order along a candidate line (within a tile by stability, across tiles
// because tiles are in line order), so a stable sort of any part of a
// candidate line orders ties as a stable sort of the input would; and an
// element among the first k of its line is among the first k of its tile,
// so no round loses one of the line's first k.
#pragma once

#include <cub/block/block_radix_sort.cuh>

#include <cstdint>

#include "shims/sort/lines.cuh"
#include "shims/sort/sort_keys.cuh"

namespace aotirt {
namespace sort {

// `count` tiles: each line of `n` elements cut into `tiles` tiles of
// `tile` elements (the last one may be shorter); of each, the first `keep`
// (or all, when the tile is shorter) are written. n < 2^31.
struct Tiling {
  uint32_t n = 0;
  uint32_t tile = 0;   // at most the block's capacity
  FastDivmod tiles;    // tiles per line
  uint32_t count = 0;  // lines * tiles
  uint32_t keep = 0;
};

// The input tensor's elements, keyed for the sort's direction.
template <typename T>
struct InputSource {
  using Key = typename Radix<T>::Key;
  const T* x = nullptr;
  Lines in;
  bool descending = false;

  struct Line {
    const T* at;
    int64_t step;
    bool descending;
    __device__ Key key(uint32_t j) const { return sort_key(at[static_cast<int64_t>(j) * step], descending); }
    __device__ int32_t position(uint32_t j) const { return static_cast<int32_t>(j); }
  };
  __device__ Line line(uint32_t l) const { return {x + in.start(l), in.step, descending}; }
};

// Candidate lines of `n` (key, position) pairs, one after another.
template <typename Key>
struct CandidateSource {
  const Key* keys = nullptr;
  const int32_t* positions = nullptr;
  uint32_t n = 0;

  struct Line {
    const Key* keys;
    const int32_t* positions;
    __device__ Key key(uint32_t j) const { return keys[j]; }
    __device__ int32_t position(uint32_t j) const { return positions[j]; }
  };
  __device__ Line line(uint32_t l) const {
    const size_t at = static_cast<size_t>(l) * n;
    return {keys + at, positions + at};
  }
};

// Candidate lines of `n` pairs; tile c of a line writes from c * keep on.
template <typename Key>
struct CandidateSink {
  Key* keys = nullptr;
  int32_t* positions = nullptr;
  uint32_t n = 0;
  uint32_t keep = 0;

  struct Line {
    Key* keys;
    int32_t* positions;
    __device__ void put(uint32_t rank, Key key, int32_t position) const {
      keys[rank] = key;
      positions[rank] = position;
    }
  };
  __device__ Line line(uint32_t l, uint32_t tile) const {
    const size_t at = static_cast<size_t>(l) * n + static_cast<size_t>(tile) * keep;
    return {keys + at, positions + at};
  }
};

// The outputs: the element at the position, copied from the input (E: an
// unsigned integer of its size), and the position as the index.
template <typename E>
struct OutputSink {
  const E* x = nullptr;
  Lines in;
  E* values = nullptr;
  int64_t* indices = nullptr;
  Lines out;  // values' layout, which indices share

  struct Line {
    const E* from;
    int64_t from_step;
    E* values;
    int64_t* indices;
    int64_t step;
    template <typename Key>
    __device__ void put(uint32_t rank, Key /*key*/, int32_t position) const {
      const int64_t at = static_cast<int64_t>(rank) * step;
      values[at] = from[static_cast<int64_t>(position) * from_step];
      indices[at] = position;
    }
  };
  __device__ Line line(uint32_t l, uint32_t /*tile*/) const {
    const int64_t at = out.start(l);
    return {x + in.start(l), in.step, values + at, indices + at, out.step};
  }
};

template <typename Key, int kBits, int kThreads, int kItems, typename Source, typename Sink>
__global__ void __launch_bounds__(kThreads) sort_tiles(Tiling tiling, Source source, Sink sink) {
  using BlockSort = cub::BlockRadixSort<Key, kThreads, kItems, int32_t>;
  __shared__ typename BlockSort::TempStorage temp;
  constexpr Key kPad = kBits == sizeof(Key) * 8 ? static_cast<Key>(~Key{0}) : static_cast<Key>((Key{1} << kBits) - 1);
  for (uint32_t tile = blockIdx.x; tile < tiling.count; tile += gridDim.x) {
    const uint32_t line = tiling.tiles.div(tile);
    const uint32_t part = tile - line * tiling.tiles.divisor;
    const uint32_t first = part * tiling.tile;
    const uint32_t length = min(tiling.tile, tiling.n - first);
    const auto from = source.line(line);
    Key keys[kItems];
    int32_t positions[kItems];
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const uint32_t j = threadIdx.x * kItems + i;
      keys[i] = j < length ? from.key(first + j) : kPad;
      positions[i] = j < length ? from.position(first + j) : 0;
    }
    BlockSort(temp).SortBlockedToStriped(keys, positions, 0, kBits);
    // Striped: thread t's i-th pair has rank i * kThreads + t.
    const auto to = sink.line(line, part);
    const uint32_t keep = min(tiling.keep, length);
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const uint32_t rank = i * kThreads + threadIdx.x;
      if (rank < keep) to.put(rank, keys[i], positions[i]);
    }
    __syncthreads();  // the next tile reuses `temp`
  }
}

}  // namespace sort
}  // namespace aotirt
