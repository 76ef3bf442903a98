// The CUDA sort behind aoti_torch_cuda_{sort,sort_stable,topk}, on the
// current stream, with no host wait and no cudaMalloc, so a CUDA graph can
// capture it. Lines of up to kTileMax elements, and top-k of few outputs
// from longer ones, are tile sorts (sort_paths.h, sort_tiles.cu); the rest
// is CUB's DeviceRadixSort::SortPairs (the CUDA toolkit's CCCL) over the
// whole tensor, here.
//
// Why radix sorts over the whole tensor rather than CUB's segmented sorts
// for long lines: DeviceSegmentedSort, built without relocatable device
// code, copies its segment counts to the host and synchronizes the stream
// (CCCL 3.0's dispatch_segmented_sort.cuh), which neither the one rule nor
// a capture allows; DeviceSegmentedRadixSort sorts each segment with one
// thread block, which leaves most of the GPU idle for the few long lines
// top-p sampling sorts (a batch of vocabulary-sized rows). So, as torch
// does for large segmented sorts:
//  1. every element gets its radix key (sort_keys.cuh: torch's order, NaN
//     largest) and its flat position line * n + j (32 bits: run_cuda
//     takes at most INT_MAX elements);
//  2. one stable radix sort of all keys, carrying the positions;
//  3. with more than one line, one stable radix sort of the positions'
//     line numbers (only their bits), which regroups the lines and keeps
//     each in key order: together a stable segmented sort;
//  4. the first k of each line are gathered into the outputs (values read
//     from the input itself, so NaN payloads and -0.0 come through as
//     they were).
// The per-element kernels divide by multiplication (lines.cuh).

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "runtime/errors.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"
#include "shims/host_elements.h"
#include "shims/sort/lines.cuh"
#include "shims/sort/sort.h"
#include "shims/sort/sort_keys.cuh"
#include "shims/sort/sort_paths.h"

namespace aotirt {
namespace sort {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t{1} << 16;  // a grid-stride loop covers the rest

unsigned blocks_for(int64_t count) {
  return static_cast<unsigned>(std::min<int64_t>((count + kThreads - 1) / kThreads, kMaxBlocks));
}

template <typename T>
__global__ void make_keys(const T* x, Lines in, FastDivmod n, uint32_t total, bool descending,
                          typename Radix<T>::Key* keys, int32_t* positions) {
  const uint32_t stride = gridDim.x * blockDim.x;  // i + stride < 2^31 + 2^24: no overflow
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const uint32_t line = n.div(i);
    keys[i] = sort_key(x[in.start(line) + static_cast<int64_t>(i - line * n.divisor) * in.step], descending);
    positions[i] = static_cast<int32_t>(i);
  }
}

__global__ void line_numbers(const int32_t* positions, FastDivmod n, uint32_t total, uint32_t* lines) {
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride)
    lines[i] = n.div(static_cast<uint32_t>(positions[i]));
}

// E: an unsigned integer of the element's size (the copy needs no more).
template <typename E>
__global__ void gather(const E* x, Lines in, const int32_t* sorted, uint32_t n, FastDivmod k, uint32_t total_out,
                       Lines out, E* values, int64_t* indices) {
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t o = blockIdx.x * blockDim.x + threadIdx.x; o < total_out; o += stride) {
    const uint32_t line = k.div(o), t = o - line * k.divisor;
    const uint32_t j = static_cast<uint32_t>(sorted[line * n + t]) - line * n;
    const int64_t at = out.start(line) + static_cast<int64_t>(t) * out.step;
    values[at] = x[in.start(line) + static_cast<int64_t>(j) * in.step];
    indices[at] = j;
  }
}

template <typename Key>
cudaError_t radix_sort(void* temp, size_t* temp_bytes, const Key* keys_in, Key* keys_out, const int32_t* positions_in,
                       int32_t* positions_out, int count, int end_bit, cudaStream_t stream) {
  return cub::DeviceRadixSort::SortPairs(temp, *temp_bytes, keys_in, keys_out, positions_in, positions_out, count, 0,
                                         end_bit, stream);
}

int bit_width(uint64_t v) {
  int bits = 0;
  while (v) {
    ++bits;
    v >>= 1;
  }
  return bits;
}

size_t round_up(size_t bytes) { return (bytes + 255) / 256 * 256; }

template <typename T>
aotirt_status sort_typed(const Call& call, const StreamRef& stream) {
  using Key = typename Radix<T>::Key;
  const Tensor& self = *call.self;
  const int64_t total = self.numel(), n = call.n;
  const int count = static_cast<int>(total);
  const int64_t line_count = total / n;
  const bool segmented = line_count > 1;
  const int line_bits = bit_width(static_cast<uint64_t>(line_count - 1));
  cudaStream_t s = stream->handle;

  size_t key_temp = 0, line_temp = 0;
  AOTIRT_CUDA_TRY(radix_sort<Key>(nullptr, &key_temp, nullptr, nullptr, nullptr, nullptr, count, Radix<T>::bits, s));
  if (segmented)
    AOTIRT_CUDA_TRY(radix_sort<uint32_t>(nullptr, &line_temp, nullptr, nullptr, nullptr, nullptr, count, line_bits, s));
  const size_t items = static_cast<size_t>(total);
  const size_t key_bytes = round_up(items * sizeof(Key)), position_bytes = round_up(items * sizeof(int32_t));
  const size_t line_bytes = segmented ? round_up(items * sizeof(uint32_t)) : 0;
  const size_t temp_bytes = round_up(std::max(key_temp, line_temp));
  StorageRef work;  // freed stream-ordered after the work queued here
  AOTIRT_TRY(allocate_storage(2 * (key_bytes + position_bytes + line_bytes) + temp_bytes, AOTIRT_DEVICE_CUDA,
                              stream->device, stream, &work));
  char* at = static_cast<char*>(work->data);
  auto take = [&](size_t bytes) {
    char* p = at;
    at += bytes;
    return p;
  };
  Key* keys_in = reinterpret_cast<Key*>(take(key_bytes));
  Key* keys_out = reinterpret_cast<Key*>(take(key_bytes));
  int32_t* positions_in = reinterpret_cast<int32_t*>(take(position_bytes));
  int32_t* positions_out = reinterpret_cast<int32_t*>(take(position_bytes));
  uint32_t* lines_in = reinterpret_cast<uint32_t*>(take(line_bytes));
  uint32_t* lines_out = reinterpret_cast<uint32_t*>(take(line_bytes));
  void* temp = take(temp_bytes);

  const Lines in = lines_of(self, call.dim);
  const FastDivmod line_length(static_cast<uint32_t>(n));
  make_keys<T><<<blocks_for(total), kThreads, 0, s>>>(static_cast<const T*>(self.data()), in, line_length,
                                                       static_cast<uint32_t>(total), call.descending, keys_in,
                                                       positions_in);
  AOTIRT_CUDA_TRY(cudaGetLastError());
  size_t bytes = temp_bytes;
  AOTIRT_CUDA_TRY(radix_sort<Key>(temp, &bytes, keys_in, keys_out, positions_in, positions_out, count,
                                  Radix<T>::bits, s));
  const int32_t* sorted = positions_out;
  if (segmented) {
    line_numbers<<<blocks_for(total), kThreads, 0, s>>>(positions_out, line_length, static_cast<uint32_t>(total),
                                                        lines_in);
    AOTIRT_CUDA_TRY(cudaGetLastError());
    bytes = temp_bytes;
    AOTIRT_CUDA_TRY(radix_sort<uint32_t>(temp, &bytes, lines_in, lines_out, positions_out, positions_in, count,
                                         line_bits, s));
    sorted = positions_in;
  }
  using E = Element<T>;
  const Tensor& values = *call.values;
  const int64_t total_out = values.numel();
  gather<E><<<blocks_for(total_out), kThreads, 0, s>>>(
      static_cast<const E*>(self.data()), in, sorted, static_cast<uint32_t>(n),
      FastDivmod(static_cast<uint32_t>(call.k)), static_cast<uint32_t>(total_out), lines_of(values, call.dim),
      static_cast<E*>(values.data()), static_cast<int64_t*>(call.indices->data()));
  AOTIRT_CUDA_TRY(cudaGetLastError());
  return AOTIRT_OK;
}

}  // namespace

aotirt_status run_cuda(const Call& call) {
  const Tensor& self = *call.self;
  if (call.values->numel() == 0) return AOTIRT_OK;  // k = 0 or an empty tensor: nothing to write
  if (self.numel() > INT_MAX)
    return fail(AOTIRT_ERROR_VALUE, std::string(call.name) + ": " + std::to_string(self.numel()) +
                                        " elements are more than this sort takes (2^31 - 1)");
  const int device = self.storage->device_index;
  AOTIRT_TRY(check_device_usable(device));
  DeviceGuard guard;
  AOTIRT_TRY(guard.enter(device));
  StreamRef stream;
  AOTIRT_TRY(stream_for_device(device, &stream));
  AOTIRT_TRY(use_on(self, stream.get()));
  AOTIRT_TRY(use_on(*call.values, stream.get()));
  AOTIRT_TRY(use_on(*call.indices, stream.get()));
  if (sorts_in_tiles(call.n, call.k)) return sort_in_tiles(call, stream);
  aotirt_status status = AOTIRT_OK;
  const bool known = host::dispatch_dtype(self.dtype, [&](auto t) { status = sort_typed<decltype(t)>(call, stream); });
  if (!known) return fail(AOTIRT_ERROR_TYPE, std::string(call.name) + ": no sort for " + dtype_name(self.dtype));
  return status;
}

}  // namespace sort
}  // namespace aotirt
