// The tile sorts of the CUDA sort (tiles.cuh; sort_paths.h says when):
// a line of up to kTileMax elements sorted by one thread block, sized to
// the line, and top-k of longer lines by rounds of tile sorts that each
// keep the first k of every tile, until one block sorts a line's last
// candidates. No host wait: every size is known on the host before the
// launches, the candidates live in one stream-ordered pool block, and a
// CUDA graph can capture the kernels.
//
// Why: a radix sort of the whole tensor (sort_cuda.cu) costs several
// passes over every element and a second sort to regroup the lines, and
// topk paid for the full sort to keep k per line. torch sorts short
// segments one block each too, and selects top-k rather than sorting.

#include <algorithm>
#include <cstdint>
#include <string>

#include "runtime/errors.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"
#include "shims/host_elements.h"
#include "shims/sort/sort_paths.h"
#include "shims/sort/tiles.cuh"

namespace aotirt {
namespace sort {
namespace {

constexpr uint32_t kMaxGrid = 1u << 20;  // blocks loop over the tiles past it
constexpr int kFullThreads = 256, kFullItems = 16;
static_assert(kFullThreads * kFullItems == kTileMax, "the largest block holds a full tile");
static_assert(kMaxSelectK < kTileMax, "each selection round must shrink a line");

template <typename Key, int kBits, int kThreads, int kItems, typename Source, typename Sink>
aotirt_status launch(const Tiling& tiling, const Source& source, const Sink& sink, cudaStream_t s) {
  const unsigned blocks = std::min(tiling.count, kMaxGrid);
  sort_tiles<Key, kBits, kThreads, kItems><<<blocks, kThreads, 0, s>>>(tiling, source, sink);
  AOTIRT_CUDA_TRY(cudaGetLastError());
  return AOTIRT_OK;
}

// The smallest block that holds a tile: a block sorts its padding at the
// cost of elements.
template <typename Key, int kBits, typename Source, typename Sink>
aotirt_status launch_fitted(const Tiling& tiling, const Source& source, const Sink& sink, cudaStream_t s) {
  if (tiling.tile <= 128) return launch<Key, kBits, 32, 4>(tiling, source, sink, s);
  if (tiling.tile <= 512) return launch<Key, kBits, 64, 8>(tiling, source, sink, s);
  if (tiling.tile <= 1024) return launch<Key, kBits, 128, 8>(tiling, source, sink, s);
  if (tiling.tile <= 2048) return launch<Key, kBits, 256, 8>(tiling, source, sink, s);
  return launch<Key, kBits, kFullThreads, kFullItems>(tiling, source, sink, s);
}

// Lines of n elements in tiles of `tile`, keeping `keep` of each.
Tiling tiling_of(uint32_t lines, uint32_t n, uint32_t tile, uint32_t keep) {
  Tiling t;
  t.n = n;
  t.tile = tile;
  const uint32_t per_line = (n + tile - 1) / tile;
  t.tiles = FastDivmod(per_line);
  t.count = lines * per_line;
  t.keep = keep;
  return t;
}

// A line's candidates after a round over tiles of kTileMax: k of every
// full tile, and at most k of the last.
uint32_t candidates_after(uint32_t n, uint32_t k) {
  const uint32_t full = (n - 1) / static_cast<uint32_t>(kTileMax);  // tiles before the last
  return full * k + std::min<uint32_t>(k, n - full * static_cast<uint32_t>(kTileMax));
}

size_t round_up(size_t bytes) { return (bytes + 255) / 256 * 256; }

template <typename T>
aotirt_status sort_typed(const Call& call, const StreamRef& stream) {
  using Key = typename Radix<T>::Key;
  constexpr int kBits = Radix<T>::bits;
  using E = Element<T>;
  const Tensor& self = *call.self;
  const uint32_t n = static_cast<uint32_t>(call.n), k = static_cast<uint32_t>(call.k);
  const uint32_t lines = static_cast<uint32_t>(self.numel() / call.n);
  cudaStream_t s = stream->handle;
  const Lines in = lines_of(self, call.dim);
  const InputSource<T> input{static_cast<const T*>(self.data()), in, call.descending};
  const OutputSink<E> output{static_cast<const E*>(self.data()), in, static_cast<E*>(call.values->data()),
                             static_cast<int64_t*>(call.indices->data()), lines_of(*call.values, call.dim)};
  if (call.n <= kTileMax) return launch_fitted<Key, kBits>(tiling_of(lines, n, n, k), input, output, s);

  // Selection. The first round leaves the most candidates: two buffers of
  // that size take turns as a round's source and sink.
  uint32_t length = candidates_after(n, k);
  const size_t items = static_cast<size_t>(lines) * length;
  const size_t key_bytes = round_up(items * sizeof(Key)), position_bytes = round_up(items * sizeof(int32_t));
  StorageRef work;  // freed stream-ordered after the work queued here
  AOTIRT_TRY(allocate_storage(2 * (key_bytes + position_bytes), AOTIRT_DEVICE_CUDA, stream->device, stream, &work));
  char* base = static_cast<char*>(work->data);
  Key* keys[2] = {reinterpret_cast<Key*>(base), reinterpret_cast<Key*>(base + key_bytes)};
  int32_t* positions[2] = {reinterpret_cast<int32_t*>(base + 2 * key_bytes),
                           reinterpret_cast<int32_t*>(base + 2 * key_bytes + position_bytes)};
  AOTIRT_TRY((launch<Key, kBits, kFullThreads, kFullItems>(tiling_of(lines, n, kTileMax, k), input,
                                                          CandidateSink<Key>{keys[0], positions[0], length, k}, s)));
  int at = 0;
  while (length > kTileMax) {
    const uint32_t next = candidates_after(length, k);
    AOTIRT_TRY((launch<Key, kBits, kFullThreads, kFullItems>(
        tiling_of(lines, length, kTileMax, k), CandidateSource<Key>{keys[at], positions[at], length},
        CandidateSink<Key>{keys[1 - at], positions[1 - at], next, k}, s)));
    at = 1 - at;
    length = next;
  }
  return launch_fitted<Key, kBits>(tiling_of(lines, length, length, k),
                                   CandidateSource<Key>{keys[at], positions[at], length}, output, s);
}

}  // namespace

aotirt_status sort_in_tiles(const Call& call, const StreamRef& stream) {
  // A round over longer lines keeps k of every kTileMax: with a larger k
  // the candidates would never shrink.
  if (!sorts_in_tiles(call.n, call.k))
    return fail(AOTIRT_ERROR_VALUE, std::string(call.name) + ": a line of " + std::to_string(call.n) +
                                        " elements with k = " + std::to_string(call.k) + " is not for the tile sort");
  aotirt_status status = AOTIRT_OK;
  const bool known =
      host::dispatch_dtype(call.self->dtype, [&](auto t) { status = sort_typed<decltype(t)>(call, stream); });
  if (!known) return fail(AOTIRT_ERROR_TYPE, std::string(call.name) + ": no sort for " + dtype_name(call.self->dtype));
  return status;
}

}  // namespace sort
}  // namespace aotirt
