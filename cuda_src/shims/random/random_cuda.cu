// The CUDA fill of the random shims: one kernel per draw, a grid-stride loop
// over Philox blocks reading {seed, first counter} from the generator's
// device memory, whose last block to finish advances the counter
// (runtime/rng.h says why the state is on the device: so that each replay of
// a CUDA graph draws new numbers). The kind of draw and the values per block
// are template arguments, and a contiguous, aligned output takes each
// block's values in one vector store (32-byte blocks: a warp's blocks in
// two coalesced stores, through shared memory).

#include <algorithm>
#include <cstring>

#include "runtime/rng.h"
#include "runtime/stream.h"
#include "shims/host_elements.h"
#include "shims/random/random.h"

namespace aotirt {
namespace random {
namespace {

constexpr int kThreads = 256;

// The unsigned type of `Bytes` bytes, for one store of a block's values.
template <int Bytes> struct Word;
template <> struct Word<1> { using type = uint8_t; };
template <> struct Word<2> { using type = uint16_t; };
template <> struct Word<4> { using type = uint32_t; };
template <> struct Word<8> { using type = uint2; };
template <> struct Word<16> { using type = uint4; };

// The bytes one vector store writes (and `out` must be aligned to): a
// block's values, at most 16 (int64's four values take two stores).
template <typename T, int Per>
constexpr int kStoreWidth = Per * sizeof(T) < 16 ? Per * static_cast<int>(sizeof(T)) : 16;

template <typename T, int Per>
__device__ __forceinline__ void store_block(T* at, const T (&values)[4]) {
  constexpr int bytes = Per * sizeof(T), width = kStoreWidth<T, Per>;
  using W = typename Word<width>::type;
  W words[bytes / width];
  memcpy(words, values, bytes);
  W* to = reinterpret_cast<W*>(at);
#pragma unroll
  for (int k = 0; k < bytes / width; ++k) to[k] = words[k];
}

// Blocks of 32 bytes (four int64 or double values: randint's usual draw)
// go out a warp at a time through shared memory. Stored straight from
// registers, a thread's two 16-byte stores land 32 bytes apart, so each
// store instruction of a warp writes half of every 32-byte sector of the
// warp's 1 KB and the other instruction the other half: twice the L2 write
// requests of a coalesced store. The int64 draw of bench/fallback_ops.py's
// randint_low_out row (8 MB) ran at 1.22x torch's time that way, where
// float32's rand (16 bytes a thread, coalesced) ran at 1.02x.
template <typename T, int Per>
constexpr bool kStagedStores = Per * sizeof(T) == 32;
constexpr int kWarp = 32;
constexpr int kStagedWords = 2 * kWarp;  // 16-byte words of a warp's 32 blocks

// Writes the warp's 32 blocks (lane l's values are block l's) to
// `warp_out`, 16-byte aligned: each lane puts its two words in `staging`
// (the warp's kStagedWords), then each of the warp's two stores writes 512
// contiguous bytes. Every lane of the warp calls it.
template <typename T>
__device__ __forceinline__ void store_warp_staged(T* warp_out, const T (&values)[4], unsigned lane,
                                                  uint4* staging) {
  uint4 words[2];
  memcpy(words, values, sizeof(words));
  staging[2 * lane] = words[0];
  staging[2 * lane + 1] = words[1];
  __syncwarp();
  uint4* to = reinterpret_cast<uint4*>(warp_out);
  to[lane] = staging[lane];
  to[kWarp + lane] = staging[kWarp + lane];
  __syncwarp();  // read before the next iteration writes staging again
}

template <typename T, Kind K, int Per>
__device__ __forceinline__ void values_at(const Draw& d, const philox::Modulus& m, uint64_t seed, uint64_t counter,
                                          T out[4]) {
  const philox::Words r = philox::at(seed, counter);
  if constexpr (K == Kind::Uniform) {
    uniforms<T>(r, out);
  } else if constexpr (K == Kind::Normal) {
    normals<T>(r, out);
  } else if constexpr (Per == 2) {
    wide_integers<T>(d, r, out);
  } else {
    uint32_t residues[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) residues[j] = philox::remainder(r.w[j], m);
    integers<T>(d.low, residues, out);
  }
}

// state: {seed, next counter, blocks of this draw finished} (rng.h). Every
// thread reads the counter before its block takes a ticket, and only the
// block that takes the last ticket writes it, so no block can read a
// counter this draw has already advanced. atomicInc with the limit
// gridDim.x - 1 puts the count back to 0 as it hands out the last ticket
// (the count is word 2's low half; its high half stays 0). Inside a graph
// the kernel is one node, so each replay continues from the counter the
// previous one left.
//
// A strided out (randint_low_out's alone: the factories make contiguous
// tensors) has a kernel of its own, whose divisions for the offsets would
// otherwise take the registers of every draw's kernel (50 against 32, half
// the threads resident at once).
template <typename T, Kind K, int Per, bool Strided>
__global__ void __launch_bounds__(kThreads)
    fill(Draw d, philox::Modulus m, uint64_t* state, Layout layout, T* out, int64_t n, uint64_t blocks,
         bool vector) {
  constexpr bool staged = !Strided && kStagedStores<T, Per>;
  const uint64_t seed = state[0], first = state[1];
  const uint64_t step = static_cast<uint64_t>(gridDim.x) * kThreads;
  T values[4];
  for (uint64_t b = static_cast<uint64_t>(blockIdx.x) * kThreads + threadIdx.x; b < blocks; b += step) {
    values_at<T, K, Per>(d, m, seed, first + b, values);
    const int64_t i = static_cast<int64_t>(b) * Per;
    if constexpr (staged) {
      // Whether to stage is the same for every lane of the warp: its
      // blocks are warp_first + lane (kThreads and step are multiples of
      // kWarp). Where it holds, all 32 blocks lie whole inside out, so
      // every lane is in this iteration to take part.
      const unsigned lane = threadIdx.x % kWarp;
      const uint64_t warp_first = b - lane;
      if (vector && warp_first + kWarp <= blocks && static_cast<int64_t>(warp_first + kWarp) * Per <= n) {
        __shared__ uint4 staging[kThreads / kWarp * kStagedWords];  // 1 KB a warp
        store_warp_staged(out + warp_first * Per, values, lane, staging + threadIdx.x / kWarp * kStagedWords);
        continue;
      }
    }
    if constexpr (Strided) {
#pragma unroll
      for (int j = 0; j < Per; ++j)
        if (i + j < n) out[layout.offset(i + j)] = values[j];
    } else if (vector && i + Per <= n) {
      store_block<T, Per>(out + i, values);
    } else {  // the last block, or an out not aligned to the vector stores
#pragma unroll
      for (int j = 0; j < Per; ++j)
        if (i + j < n) out[i + j] = values[j];
    }
  }
  __syncthreads();  // this block's reads of state[1] come before its ticket
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicInc(reinterpret_cast<unsigned int*>(state + 2), gridDim.x - 1) == gridDim.x - 1) {
      __threadfence();  // every block's ticket, so its reads, before the write
      state[1] = first + blocks;
    }
  }
}

// Blocks of kThreads threads that fill `device` at full occupancy, torch's
// grid for its random kernels (where registers allow fewer at once, the
// rest run as the first finish: each does the same share of the loop).
aotirt_status grid_limit(int device, uint64_t* out) {
  DeviceFacts facts;
  AOTIRT_TRY(device_facts(device, &facts));
  const int per_multiprocessor = std::max(1, facts.threads_per_multiprocessor / kThreads);
  *out = static_cast<uint64_t>(std::max(1, facts.multiprocessors * per_multiprocessor));
  return AOTIRT_OK;
}

struct Launch {
  unsigned grid;
  cudaStream_t stream;
  uint64_t* state;
  const Layout* layout;
  int64_t n;
  uint64_t blocks;
};

template <typename T, Kind K, int Per>
aotirt_status launch(const Launch& l, const Draw& d, const philox::Modulus& m, T* out) {
  const bool vector = reinterpret_cast<uintptr_t>(out) % kStoreWidth<T, Per> == 0;
  if (l.layout->contiguous)
    fill<T, K, Per, false><<<l.grid, kThreads, 0, l.stream>>>(d, m, l.state, *l.layout, out, l.n, l.blocks, vector);
  else
    fill<T, K, Per, true><<<l.grid, kThreads, 0, l.stream>>>(d, m, l.state, *l.layout, out, l.n, l.blocks, false);
  AOTIRT_CUDA_TRY(cudaGetLastError());
  return AOTIRT_OK;
}

}  // namespace

aotirt_status run_cuda(const char* name, const Draw& d, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return AOTIRT_OK;
  const int device = out.storage->device_index;
  AOTIRT_TRY(check_device_usable(device));
  DeviceGuard guard;
  AOTIRT_TRY(guard.enter(device));
  StreamRef stream;
  AOTIRT_TRY(stream_for_device(device, &stream));
  AOTIRT_TRY(use_on(out, stream.get()));  // earlier work on out's memory comes first
  const uint64_t blocks = blocks_for(d, out.dtype, n);
  uint64_t most = 0;
  AOTIRT_TRY(grid_limit(device, &most));
  uint64_t* words = nullptr;
  std::unique_lock<std::mutex> lock;
  AOTIRT_TRY(current_generator().use_on_device(device, stream.get(), &words, &lock));
  const Layout layout = layout_of(out);
  const unsigned grid = static_cast<unsigned>(std::min<uint64_t>((blocks + kThreads - 1) / kThreads, most));
  const Launch l{grid, stream->handle, words, &layout, n, blocks};
  const bool wide = d.kind == Kind::Integer && d.range > (uint64_t{1} << 32);
  const philox::Modulus m = d.kind == Kind::Integer && !wide ? philox::modulus_of(d.range) : philox::Modulus{};
  aotirt_status status = AOTIRT_OK;
  bool drawn = false;  // stays false for a dtype the kernels do not make
  host::dispatch_dtype(out.dtype, [&](auto zero) {
    using T = decltype(zero);
    T* data = static_cast<T*>(out.data());
    if (d.kind == Kind::Integer) {
      drawn = true;
      status = wide ? launch<T, Kind::Integer, 2>(l, d, m, data) : launch<T, Kind::Integer, 4>(l, d, m, data);
    } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, __half> ||
                         std::is_same_v<T, __nv_bfloat16>) {
      constexpr int per = kIsDouble<T> ? 2 : 4;
      drawn = true;
      status = d.kind == Kind::Uniform ? launch<T, Kind::Uniform, per>(l, d, m, data)
                                       : launch<T, Kind::Normal, per>(l, d, m, data);
    }
  });
  AOTIRT_TRY(status);
  if (!drawn)  // (the shims refuse these dtypes first: rand and randn make floating ones only)
    return fail(AOTIRT_ERROR_TYPE, std::string(name) + ": dtype " + dtype_name(out.dtype) + " is not supported");
  out.stream = std::move(stream);  // consumers of out now wait for this stream
  return AOTIRT_OK;
}

}  // namespace random
}  // namespace aotirt
