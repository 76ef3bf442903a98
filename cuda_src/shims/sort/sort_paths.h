// The CUDA sort's ways, chosen by line length n and the number k of
// outputs per line (k = n for a sort). sort_cuda.cu picks one:
//  - n <= kTileMax: one thread block sorts each line whole (sort_tiles.cu);
//  - longer lines with k <= kMaxSelectK (top-k): rounds of block sorts,
//    each keeping the first k of every tile of kTileMax elements, until a
//    line's candidates fit one block, which sorts them (sort_tiles.cu);
//  - otherwise: one radix sort of the whole tensor (sort_cuda.cu).
#pragma once

#include <cstdint>

#include "runtime/errors.h"
#include "runtime/stream.h"
#include "shims/sort/sort.h"

namespace aotirt {
namespace sort {

// The longest line (and tile) one thread block sorts: 256 threads of 16
// elements, torch's limit for its own block sort of short segments.
constexpr int64_t kTileMax = 4096;
// The largest k selected by tiles: each round keeps k of every kTileMax,
// at least 8 times fewer; past it, a full sort's fewer passes win.
constexpr int64_t kMaxSelectK = 512;

inline bool sorts_in_tiles(int64_t n, int64_t k) { return n <= kTileMax || k <= kMaxSelectK; }

// Queues the tile sort of `call` (sorts_in_tiles(call.n, call.k)) on `stream`.
aotirt_status sort_in_tiles(const Call& call, const StreamRef& stream);

}  // namespace sort
}  // namespace aotirt
