#include "runtime/copy.h"

#include <cstring>
#include <string>
#include <vector>

#include "runtime/dtypes.h"
#include "runtime/errors.h"
#include "runtime/strided_host_copy.h"
#include "runtime/strided_index.h"
#include "runtime/transfer.h"

namespace aotirt {
namespace {

using strided::CopyShape;
using strided::Index32;

// A copy of `ndim` dimensions of `sizes` between the two strides, reduced
// (strided_index.h): the fewest dimensions that describe both layouts.
CopyShape reduced(int64_t ndim, const int64_t* sizes, const int64_t* dst_strides, const int64_t* src_strides) {
  CopyShape shape;
  shape.ndim = static_cast<int32_t>(ndim);
  for (int64_t d = 0; d < ndim; ++d) {
    shape.sizes[d] = sizes[d];
    shape.dst_strides[d] = dst_strides[d];
    shape.src_strides[d] = src_strides[d];
  }
  return strided::reduce(shape);
}

// The copy of `src`'s elements into `dst`'s (same shape).
CopyShape copy_shape(const Tensor& dst, const Tensor& src) {
  return reduced(dst.ndim, dst.sizes, dst.strides, src.strides);
}

// `t`'s elements into a C-contiguous buffer of its shape (the copy
// routine's gather: no Tensor copied, so no reference counts touched).
CopyShape gather_shape(const Tensor& t) {
  int64_t packed[AOTIRT_MAX_DIMS];
  contiguous_strides(t.ndim, t.sizes, packed);
  return reduced(t.ndim, t.sizes, packed, t.strides);
}

// Elements are moved as same-sized unsigned integers (or, where rows are
// contiguous, as wider words: strided::widen): a copy needs no arithmetic,
// so one kernel per word width serves every dtype. Where every offset fits
// 31 bits (nearly every copy), the offsets are found in 32-bit arithmetic
// whose divisions are multiplications, and a row-major destination (a
// gather into a dense buffer) takes the index as its offset.
static_assert(strided::kWidestWord == sizeof(uint4), "the widest word is moved as a uint4");

template <typename Word, bool DstRowMajor>
__global__ void strided_copy_kernel_32(Word* dst, const Word* src, Index32 index, uint32_t numel) {
  const uint32_t step = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < numel; i += step) {
    uint32_t to, from;
    index.offsets<DstRowMajor>(i, &to, &from);
    dst[to] = src[from];
  }
}

template <typename Word>
__global__ void strided_copy_kernel_64(Word* dst, const Word* src, CopyShape shape, int64_t numel) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < numel; i += step)
    dst[strided::offset64(shape, shape.dst_strides, i)] = src[strided::offset64(shape, shape.src_strides, i)];
}

template <typename Word>
void launch_strided_copy(void* dst, const void* src, const CopyShape& shape, int64_t numel, cudaStream_t stream) {
  constexpr int kThreads = 256;
  int64_t blocks = (numel + kThreads - 1) / kThreads;
  if (blocks > 65536) blocks = 65536;  // grid-stride loop covers the rest
  Word* to = static_cast<Word*>(dst);
  const Word* from = static_cast<const Word*>(src);
  const unsigned grid = static_cast<unsigned>(blocks);
  if (!strided::fits_index32(shape)) {
    strided_copy_kernel_64<Word><<<grid, kThreads, 0, stream>>>(to, from, shape, numel);
    return;
  }
  const Index32 index = Index32::of(shape);
  const uint32_t count = static_cast<uint32_t>(numel);
  if (strided::row_major(shape, shape.dst_strides))
    strided_copy_kernel_32<Word, true><<<grid, kThreads, 0, stream>>>(to, from, index, count);
  else
    strided_copy_kernel_32<Word, false><<<grid, kThreads, 0, stream>>>(to, from, index, count);
}

aotirt_status strided_copy_on_device(void* dst, const void* src, const CopyShape& shape, int64_t numel,
                                     size_t itemsize, Stream* stream) {
  if (numel == 0) return AOTIRT_OK;
  DeviceGuard guard;  // kernels launch on the current device's streams only
  AOTIRT_TRY(guard.enter(stream->device));
  if (itemsize != 1 && itemsize != 2 && itemsize != 4 && itemsize != 8)
    return fail(AOTIRT_ERROR_TYPE, "no strided copy for elements of " + std::to_string(itemsize) + " bytes");
  const strided::WideCopy copy = strided::widen(shape, numel, itemsize, reinterpret_cast<uintptr_t>(dst),
                                                reinterpret_cast<uintptr_t>(src));
  const cudaStream_t on = stream->handle;
  switch (copy.word) {
    case 1: launch_strided_copy<uint8_t>(dst, src, copy.shape, copy.numel, on); break;
    case 2: launch_strided_copy<uint16_t>(dst, src, copy.shape, copy.numel, on); break;
    case 4: launch_strided_copy<uint32_t>(dst, src, copy.shape, copy.numel, on); break;
    case 8: launch_strided_copy<uint64_t>(dst, src, copy.shape, copy.numel, on); break;
    case sizeof(uint4): launch_strided_copy<uint4>(dst, src, copy.shape, copy.numel, on); break;
    default: return fail(AOTIRT_ERROR_TYPE, "no strided copy in words of " + std::to_string(copy.word) + " bytes");
  }
  AOTIRT_CUDA_TRY(cudaGetLastError());
  return AOTIRT_OK;
}

}  // namespace

aotirt_status copy_to_host(const Tensor& t, void* dst, size_t nbytes) {
  const size_t itemsize = t.itemsize();
  const int64_t numel = t.numel();
  const size_t needed = static_cast<size_t>(numel) * itemsize;
  if (nbytes != needed)
    return fail(AOTIRT_ERROR_VALUE, "copy_to_host: destination holds " + std::to_string(nbytes) +
                                        " bytes, the tensor has " + std::to_string(needed));
  if (numel == 0) return AOTIRT_OK;

  const Storage& storage = *t.storage;
  if (storage.device_type == AOTIRT_DEVICE_CPU) {
    if (t.is_contiguous())
      std::memcpy(dst, t.data(), needed);
    else
      strided::copy_on_host(static_cast<char*>(dst), static_cast<const char*>(t.data()), gather_shape(t), numel,
                            itemsize);
    return AOTIRT_OK;
  }

  AOTIRT_TRY(check_device_usable(storage.device_index));
  StreamRef stream = t.stream;
  if (!stream) AOTIRT_TRY(shared_stream(storage.device_index, &stream));
  const void* source = t.data();
  // Freed (stream-ordered, so after the copy that reads it) when this returns.
  StorageRef staging;
  if (!t.is_contiguous()) {
    // Gather on the device first: one contiguous DMA beats many small ones.
    // Through the stream's block cache, like every temporary.
    AOTIRT_TRY(allocate_storage(needed, AOTIRT_DEVICE_CUDA, stream->device, stream, &staging));
    AOTIRT_TRY(strided_copy_on_device(staging->data, t.data(), gather_shape(t), numel, itemsize, stream.get()));
    source = staging->data;
  }
  cudaError_t copied = cudaMemcpyAsync(dst, source, needed, cudaMemcpyDeviceToHost, stream->handle);
  if (copied != cudaSuccess) return fail_cuda(copied, "cudaMemcpyAsync(device to host)");
  // The one place the host waits for the GPU (docs/design.md, "The one rule").
  // A fault in any earlier kernel on this stream surfaces here.
  cudaError_t done = cudaStreamSynchronize(stream->handle);
  if (done != cudaSuccess) {
    note_cuda_error(stream->device, done);
    return fail_cuda(done, "cudaStreamSynchronize, waiting for the copy to host (an earlier kernel on this "
                           "stream may have failed)");
  }
  return AOTIRT_OK;
}

aotirt_status copy_device_to_device(const Tensor& dst, const Tensor& src, Stream* stream) {
  // One shape: the copy walks both tensors by dst's sizes (copy_shape).
  bool same = dst.ndim == src.ndim && dst.itemsize() == src.itemsize();
  for (int64_t d = 0; same && d < dst.ndim; ++d) same = dst.sizes[d] == src.sizes[d];
  if (!same)
    return fail(AOTIRT_ERROR_VALUE, "a device copy between tensors of different shapes or element sizes");
  const int64_t numel = dst.numel();
  const size_t itemsize = dst.itemsize();
  if (dst.is_contiguous() && src.is_contiguous()) {
    if (numel == 0) return AOTIRT_OK;
    AOTIRT_CUDA_TRY(cudaMemcpyAsync(dst.data(), src.data(), numel * itemsize,
                                    cudaMemcpyDeviceToDevice, stream->handle));
    return AOTIRT_OK;
  }
  return strided_copy_on_device(dst.data(), src.data(), copy_shape(dst, src), numel, itemsize, stream);
}

void copy_host_to_host(const Tensor& dst, const Tensor& src) {
  const int64_t numel = dst.numel();
  if (numel == 0) return;
  if (dst.is_contiguous() && src.is_contiguous()) {
    std::memcpy(dst.data(), src.data(), numel * dst.itemsize());
    return;
  }
  strided::copy_on_host(static_cast<char*>(dst.data()), static_cast<const char*>(src.data()), copy_shape(dst, src),
                        numel, dst.itemsize());
}

aotirt_status copy_between(Tensor& dst, const Tensor& src, Stream* on) {
  AOTIRT_TRY(check_writable(dst, "copy_: the destination"));
  if (dst.dtype != src.dtype)
    return fail(AOTIRT_ERROR_TYPE, std::string("copy_: dtype conversion from ") +
                                               dtype_name(src.dtype) + " to " +
                                               dtype_name(dst.dtype) + " is not supported");
  if (dst.ndim != src.ndim)
    return fail(AOTIRT_ERROR_VALUE, "copy_: broadcasting is not supported (ranks differ)");
  for (int64_t d = 0; d < dst.ndim; ++d)
    if (dst.sizes[d] != src.sizes[d])
      return fail(AOTIRT_ERROR_VALUE, "copy_: shapes differ at dimension " + std::to_string(d));

  const bool dst_cuda = dst.storage->device_type == AOTIRT_DEVICE_CUDA;
  const bool src_cuda = src.storage->device_type == AOTIRT_DEVICE_CUDA;
  if (!dst_cuda && !src_cuda) {
    copy_host_to_host(dst, src);
    return AOTIRT_OK;
  }
  if (dst_cuda && src_cuda) {
    // Between two GPUs the copy is the destination's (a peer copy on its
    // device, transfer.h): no kernel of one GPU touches another's memory.
    const bool across = dst.storage->device_index != src.storage->device_index;
    StreamRef stream;
    AOTIRT_TRY(stream_on_device(on, across ? dst.storage->device_index : src.storage->device_index, &stream));
    // The copy reads src and writes dst: it waits for the work on both, and
    // neither memory may be handed out again before it is done.
    AOTIRT_TRY(use_on(dst, stream.get()));
    if (across) {
      AOTIRT_TRY(copy_across_devices(dst, src, stream.get()));
    } else {
      AOTIRT_TRY(use_on(src, stream.get()));
      AOTIRT_TRY(copy_device_to_device(dst, src, stream.get()));
    }
    dst.stream = std::move(stream);
    return AOTIRT_OK;
  }
  if (!dst_cuda) {
    // A CPU destination needs the data now: this is the copy routine's job.
    if (dst.is_contiguous()) return copy_to_host(src, dst.data(), dst.numel() * dst.itemsize());
    // A strided CPU destination: land the data contiguously, then scatter.
    StorageRef storage;
    AOTIRT_TRY(allocate_storage(dst.numel() * dst.itemsize(), AOTIRT_DEVICE_CPU, 0, StreamRef(), &storage));
    Tensor landing;
    landing.storage = storage;
    landing.ndim = dst.ndim;
    landing.dtype = dst.dtype;
    for (int64_t d = 0; d < dst.ndim; ++d) landing.sizes[d] = dst.sizes[d];
    contiguous_strides(dst.ndim, dst.sizes, landing.strides);
    AOTIRT_TRY(copy_to_host(src, landing.data(), dst.numel() * dst.itemsize()));
    copy_host_to_host(dst, landing);
    return AOTIRT_OK;
  }
  // Host to device: stream-ordered, no wait. Pageable sources are staged by
  // CUDA before cudaMemcpyAsync returns, so `src` may change afterwards.
  if (!dst.is_contiguous() || !src.is_contiguous())
    return fail(AOTIRT_ERROR_VALUE, "copy_: host to device copies need contiguous tensors");
  StreamRef stream;
  AOTIRT_TRY(stream_on_device(on, dst.storage->device_index, &stream));
  AOTIRT_TRY(use_on(dst, stream.get()));
  AOTIRT_CUDA_TRY(cudaMemcpyAsync(dst.data(), src.data(), dst.numel() * dst.itemsize(),
                                  cudaMemcpyHostToDevice, stream->handle));
  dst.stream = std::move(stream);
  return AOTIRT_OK;
}

}  // namespace aotirt
