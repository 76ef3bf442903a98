// scatter and index_put on CUDA: one thread per position of the walk
// (grid-stride), queued on the caller's stream, no host wait, nothing a
// graph capture cannot record (mean's count buffer comes from the
// stream-ordered pool). Reductions and accumulation use atomics
// (device_atomics.cuh), so repeated targets are combined in no fixed order,
// as torch's CUDA kernels do. An index outside its dimension is skipped (the
// write is dropped): torch device-asserts there; aotirt neither writes out
// of bounds nor waits to report it.

#include <cuda_runtime.h>

#include <string>

#include "runtime/errors.h"
#include "runtime/tensor.h"
#include "shims/indexing/device_atomics.cuh"
#include "shims/indexing/element_ops.h"
#include "shims/indexing/indexing.h"

namespace aotirt {
namespace indexing {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65536;  // a grid-stride loop covers the rest

unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < kMaxBlocks ? b : kMaxBlocks);
}

__device__ inline int64_t read_index(const void* data, bool int32, int64_t offset) {
  return int32 ? static_cast<const int32_t*>(data)[offset] : static_cast<const int64_t*>(data)[offset];
}

// Offsets of position `linear` (row-major over sizes) in up to three layouts.
__device__ inline void unravel(int64_t linear, int32_t ndim, const int64_t* sizes, int64_t* at) {
  for (int32_t d = ndim - 1; d >= 0; --d) {
    at[d] = linear % sizes[d];
    linear /= sizes[d];
  }
}

__device__ inline int64_t dot(const int64_t* at, const int64_t* strides, int32_t ndim) {
  int64_t offset = 0;
  for (int32_t d = 0; d < ndim; ++d) offset += at[d] * strides[d];
  return offset;
}

// out's offset of the element position `at` of index writes, and its
// row-major number among out's elements; false when the index is out of range.
__device__ inline bool scatter_target(const ScatterPlan& p, const int64_t* at, int64_t* offset, int64_t* flat) {
  const int64_t i = read_index(p.index, p.index_is_int32, dot(at, p.index_strides, p.ndim));
  if (i < 0 || i >= p.dim_size) return false;
  int64_t o = 0, f = 0;
  for (int32_t d = 0; d < p.ndim; ++d) {
    const int64_t c = d == p.dim ? i : at[d];
    o += c * p.out_strides[d];
    f = f * p.out_sizes[d] + c;
  }
  *offset = o;
  *flat = f;
  return true;
}

enum class Pass { Fill, Write, Count };

template <typename T, Pass pass>
__global__ void scatter_kernel(ScatterPlan p, int32_t* counts) {
  T* out = static_cast<T*>(p.out);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t n = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; n < p.numel; n += step) {
    int64_t at[kMaxDims];
    unravel(n, p.ndim, p.sizes, at);
    int64_t offset = 0, flat = 0;
    if (!scatter_target(p, at, &offset, &flat)) continue;
    if constexpr (pass == Pass::Fill) {
      out[offset] = identity<T>(p.op);
    } else if constexpr (pass == Pass::Count) {
      atomicAdd(counts + flat, 1);
    } else {
      const T v = p.src_is_value ? from_value<T>(p.value)
                                 : static_cast<const T*>(p.src)[dot(at, p.src_strides, p.ndim)];
      if (p.op == Op::Assign)
        out[offset] = v;
      else
        atomic_combine(out + offset, p.op, v);
    }
  }
}

template <typename T>
__global__ void mean_divide_kernel(ScatterPlan p, const int32_t* counts) {
  T* out = static_cast<T*>(p.out);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t n = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; n < p.out_numel; n += step) {
    const int64_t c = counts[n] + (p.include_self ? 1 : 0);
    if (c <= 1) continue;
    int64_t at[kMaxDims];
    unravel(n, p.out_ndim, p.out_sizes, at);
    T& o = out[dot(at, p.out_all_strides, p.out_ndim)];
    o = divide(o, c);
  }
}

template <typename T>
__global__ void index_put_kernel(IndexPutPlan p) {
  T* out = static_cast<T*>(p.out);
  const T* values = static_cast<const T*>(p.values);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t n = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; n < p.numel; n += step) {
    int64_t at[kMaxDims];
    unravel(n, p.ndim, p.sizes, at);
    int64_t offset = dot(at, p.out_strides, p.ndim);
    bool in_range = true;
    for (int32_t k = 0; k < p.num_index; ++k) {
      int64_t i = read_index(p.index[k], p.index_is_int32[k], dot(at, p.index_strides[k], p.ndim));
      if (i < 0) i += p.index_size[k];
      in_range = in_range && i >= 0 && i < p.index_size[k];
      offset += i * p.index_stride[k];
    }
    if (!in_range) continue;
    const T v = values[dot(at, p.value_strides, p.ndim)];
    if (p.accumulate)
      atomic_combine(out + offset, Op::Add, v);
    else
      out[offset] = v;
  }
}

// index_put that writes whole rows: the last dimension is a sliced one,
// contiguous in out and in values, and no index varies along it (a KV-cache
// or embedding update: out[idx] = values). Each thread moves one 16-byte
// chunk of a row instead of one element, and reads the indices once per
// chunk, not once per element.
constexpr int kChunkBytes = 16;

template <typename T>
bool writes_whole_rows(const IndexPutPlan& p) {
  if (p.accumulate || p.ndim < 1) return false;
  const int32_t last = p.ndim - 1;
  const int64_t per_chunk = kChunkBytes / static_cast<int64_t>(sizeof(T));
  if (per_chunk < 1 || p.sizes[last] % per_chunk != 0) return false;
  if (p.out_strides[last] != 1 || p.value_strides[last] != 1) return false;
  if (reinterpret_cast<uintptr_t>(p.out) % kChunkBytes != 0 || reinterpret_cast<uintptr_t>(p.values) % kChunkBytes != 0)
    return false;
  const auto aligned = [](int64_t stride) { return (stride * static_cast<int64_t>(sizeof(T))) % kChunkBytes == 0; };
  for (int32_t d = 0; d < last; ++d)
    if (!aligned(p.out_strides[d]) || !aligned(p.value_strides[d])) return false;
  for (int32_t k = 0; k < p.num_index; ++k)
    if (p.index_strides[k][last] != 0 || !aligned(p.index_stride[k])) return false;
  return true;
}

template <typename T>
__global__ void index_put_rows_kernel(IndexPutPlan p) {
  const int32_t last = p.ndim - 1;
  const int64_t per_chunk = kChunkBytes / static_cast<int64_t>(sizeof(T));
  const int64_t chunks_per_row = p.sizes[last] / per_chunk;
  const int64_t chunks = p.numel / per_chunk;
  char* out = static_cast<char*>(p.out);
  const char* values = static_cast<const char*>(p.values);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t n = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; n < chunks; n += step) {
    const int64_t row = n / chunks_per_row;
    const int64_t column = (n - row * chunks_per_row) * per_chunk;
    int64_t at[kMaxDims];
    unravel(row, last, p.sizes, at);
    int64_t offset = dot(at, p.out_strides, last) + column;
    bool in_range = true;
    for (int32_t k = 0; k < p.num_index; ++k) {
      int64_t i = read_index(p.index[k], p.index_is_int32[k], dot(at, p.index_strides[k], last));
      if (i < 0) i += p.index_size[k];
      in_range = in_range && i >= 0 && i < p.index_size[k];
      offset += i * p.index_stride[k];
    }
    if (!in_range) continue;
    const int64_t from = dot(at, p.value_strides, last) + column;
    *reinterpret_cast<uint4*>(out + offset * static_cast<int64_t>(sizeof(T))) =
        *reinterpret_cast<const uint4*>(values + from * static_cast<int64_t>(sizeof(T)));
  }
}

template <typename T>
aotirt_status launch_scatter(const char* shim, const ScatterPlan& p, Stream* stream) {
  const cudaStream_t s = stream->handle;
  if (p.op != Op::Assign && !p.include_self)
    scatter_kernel<T, Pass::Fill><<<blocks_for(p.numel), kThreads, 0, s>>>(p, nullptr);
  scatter_kernel<T, Pass::Write><<<blocks_for(p.numel), kThreads, 0, s>>>(p, nullptr);
  cudaError_t launched = cudaGetLastError();
  if (launched != cudaSuccess) return fail_cuda(launched, std::string(shim) + ": launching the scatter kernel");
  if (p.op != Op::Mean || p.out_numel == 0) return AOTIRT_OK;
  // Values per element of out, in a buffer from the stream's pool (freed,
  // stream-ordered, when `counts` goes).
  StorageRef counts;
  AOTIRT_TRY(allocate_storage(static_cast<size_t>(p.out_numel) * sizeof(int32_t), AOTIRT_DEVICE_CUDA,
                              stream->device, StreamRef::share(stream), &counts));
  int32_t* c = static_cast<int32_t*>(counts->data);
  AOTIRT_CUDA_TRY(cudaMemsetAsync(c, 0, static_cast<size_t>(p.out_numel) * sizeof(int32_t), s));
  scatter_kernel<T, Pass::Count><<<blocks_for(p.numel), kThreads, 0, s>>>(p, c);
  mean_divide_kernel<T><<<blocks_for(p.out_numel), kThreads, 0, s>>>(p, c);
  launched = cudaGetLastError();
  if (launched != cudaSuccess) return fail_cuda(launched, std::string(shim) + ": launching the scatter mean kernels");
  return AOTIRT_OK;
}

template <typename Fn>
aotirt_status dispatch(const char* shim, int32_t dtype, Fn&& fn) {
  switch (dtype) {
    case AOTIRT_DTYPE_UINT8: return fn(uint8_t{});
    case AOTIRT_DTYPE_INT8: return fn(int8_t{});
    case AOTIRT_DTYPE_INT16: return fn(int16_t{});
    case AOTIRT_DTYPE_INT32: return fn(int32_t{});
    case AOTIRT_DTYPE_INT64: return fn(int64_t{});
    case AOTIRT_DTYPE_FLOAT16: return fn(__half{});
    case AOTIRT_DTYPE_FLOAT32: return fn(float{});
    case AOTIRT_DTYPE_FLOAT64: return fn(double{});
    case AOTIRT_DTYPE_BOOL: return fn(bool{});
    case AOTIRT_DTYPE_BFLOAT16: return fn(__nv_bfloat16{});
    default: return fail(AOTIRT_ERROR_TYPE, std::string(shim) + ": dtype " + dtype_name(dtype) + " is not supported");
  }
}

}  // namespace

aotirt_status scatter_cuda(const char* shim, const ScatterPlan& p, Stream* stream) {
  if (p.numel == 0) return AOTIRT_OK;
  DeviceGuard guard;
  AOTIRT_TRY(guard.enter(stream->device));
  return dispatch(shim, p.dtype, [&](auto zero) { return launch_scatter<decltype(zero)>(shim, p, stream); });
}

aotirt_status index_put_cuda(const char* shim, const IndexPutPlan& p, Stream* stream) {
  if (p.numel == 0) return AOTIRT_OK;
  DeviceGuard guard;
  AOTIRT_TRY(guard.enter(stream->device));
  return dispatch(shim, p.dtype, [&](auto zero) {
    using T = decltype(zero);
    if (writes_whole_rows<T>(p))
      index_put_rows_kernel<T><<<blocks_for(p.numel / (kChunkBytes / sizeof(T))), kThreads, 0, stream->handle>>>(p);
    else
      index_put_kernel<T><<<blocks_for(p.numel), kThreads, 0, stream->handle>>>(p);
    const cudaError_t launched = cudaGetLastError();
    if (launched != cudaSuccess) return fail_cuda(launched, std::string(shim) + ": launching the index_put kernel");
    return AOTIRT_OK;
  });
}

}  // namespace indexing
}  // namespace aotirt
