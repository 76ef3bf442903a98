#include "runtime/transfer.h"

#include <map>
#include <mutex>
#include <new>
#include <string>
#include <utility>

#include "runtime/copy.h"
#include "runtime/errors.h"
#include "runtime/graph_memory.h"

namespace aotirt {
namespace {

// The pairs (consumer, producer) already looked at, and whether direct access
// is on. Once per pair: a second cudaDeviceEnablePeerAccess is an error, and
// each one maps memory. Never destroyed: copies may come at exit.
std::mutex peer_mutex;
std::map<std::pair<int, int>, bool>& peer_pairs() {
  static auto* pairs = new std::map<std::pair<int, int>, bool>();
  return *pairs;
}

// Turns on direct access from `consumer` to `producer`'s memory where the
// hardware allows. A refusal is not an error: cudaMemcpyPeerAsync works
// without it (the driver stages the copy), only slower. Raw CUDA calls, each
// error cleared, so that a refusal leaves no error behind; the current device
// is restored on every path.
bool enable_peer_access(int consumer, int producer) {
  int can = 0;
  if (cudaDeviceCanAccessPeer(&can, consumer, producer) != cudaSuccess || !can) {
    (void)cudaGetLastError();
    return false;
  }
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess || (previous != consumer && cudaSetDevice(consumer) != cudaSuccess)) {
    (void)cudaGetLastError();
    return false;
  }
  // The consumer's context: memory made with cudaMalloc (a borrowed torch tensor).
  cudaError_t err = cudaDeviceEnablePeerAccess(producer, 0);
  const bool enabled_here = err == cudaSuccess;
  if (err == cudaErrorPeerAccessAlreadyEnabled) err = cudaSuccess;  // someone else in the process did (torch)
  bool enabled = err == cudaSuccess;
  if (enabled) {
    // Pool memory (aotirt's own blocks) does not follow context peer access
    // (CUDA programming guide, stream-ordered allocator, "Device
    // Accessibility for Multi-GPU Support"): the producer's default pool is
    // opened to the consumer by itself.
    cudaMemPool_t pool = nullptr;
    cudaMemAccessDesc access{};
    access.location.type = cudaMemLocationTypeDevice;
    access.location.id = consumer;
    access.flags = cudaMemAccessFlagsProtReadWrite;
    enabled = cudaDeviceGetDefaultMemPool(&pool, producer) == cudaSuccess &&
              cudaMemPoolSetAccess(pool, &access, 1) == cudaSuccess;
    // Both or neither: copies then take one path (direct, or staged by the
    // driver) whichever memory they read. Access someone else enabled stays.
    if (!enabled && enabled_here) (void)cudaDeviceDisablePeerAccess(producer);
  }
  (void)cudaGetLastError();
  if (previous != consumer) restore_device(previous);
  return enabled;
}

void ensure_peer_access(int consumer, int producer) {
  // Not while this thread captures a CUDA graph: enabling access is not work
  // a capture may see (the call could invalidate it). The copy works without.
  if (capture_on_this_thread()) return;
  std::lock_guard<std::mutex> lock(peer_mutex);
  const auto key = std::make_pair(consumer, producer);
  if (peer_pairs().count(key)) return;
  peer_pairs()[key] = enable_peer_access(consumer, producer);
}

// `nbytes` from `src` on `src_device` to `dst` on `on`'s device, queued on
// `on` (already ordered after src's producer).
aotirt_status peer_copy(void* dst, const void* src, int src_device, size_t nbytes, Stream* on) {
  if (nbytes == 0) return AOTIRT_OK;
  if (src_device == on->device) {
    AOTIRT_CUDA_TRY(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, on->handle));
    return AOTIRT_OK;
  }
  ensure_peer_access(on->device, src_device);
  cudaError_t err = cudaMemcpyPeerAsync(dst, on->device, src, src_device, nbytes, on->handle);
  if (err != cudaSuccess)
    return fail_cuda(err, "cudaMemcpyPeerAsync(" + std::to_string(nbytes) + " bytes, cuda:" +
                              std::to_string(src_device) + " to cuda:" + std::to_string(on->device) + ")");
  return AOTIRT_OK;
}

std::string where(int32_t device_type, int32_t device_index) {
  return device_type == AOTIRT_DEVICE_CPU ? std::string("cpu") : "cuda:" + std::to_string(device_index);
}

}  // namespace

aotirt_status copy_to_device(const Tensor& src, int device, Stream* on, Tensor** out) {
  const Storage& from = *src.storage;
  if (from.device_type != AOTIRT_DEVICE_CUDA)
    return fail(AOTIRT_ERROR_VALUE, "copy_to_device: the source is a CPU tensor, not a CUDA one");
  AOTIRT_TRY(check_device_usable(from.device_index));
  AOTIRT_TRY(check_device_usable(device));
  StreamRef stream;
  AOTIRT_TRY(stream_or_shared(on, device, &stream));  // the device is checked where its stream is made
  DeviceGuard guard;  // the allocation and the copy are the consumer's
  AOTIRT_TRY(guard.enter(device));
  // The copy reads src after the work that produces it, and src's memory is
  // not handed out again before the copy has read it.
  AOTIRT_TRY(use_on(src, stream.get()));
  const size_t nbytes = src.extent_bytes();
  StorageRef storage;
  AOTIRT_TRY(allocate_storage(nbytes, AOTIRT_DEVICE_CUDA, device, stream, &storage));
  void* dst = storage->data;
  Tensor* copy = nullptr;
  AOTIRT_TRY(make_tensor(std::move(storage), src.ndim, src.sizes, src.strides, 0, src.dtype, stream, &copy));
  aotirt_status status = peer_copy(dst, src.data(), from.device_index, nbytes, stream.get());
  if (status != AOTIRT_OK) {
    delete copy;  // freed stream-ordered, after whatever was queued
    return status;
  }
  *out = copy;
  return AOTIRT_OK;
}

aotirt_status copy_across_devices(const Tensor& dst, const Tensor& src, Stream* on) {
  if (dst.is_contiguous() && src.is_contiguous()) {
    AOTIRT_TRY(use_on(src, on));
    return peer_copy(dst.data(), src.data(), src.storage->device_index,
                     static_cast<size_t>(dst.numel()) * dst.itemsize(), on);
  }
  // A strided view: its bytes land on this device first (one DMA), and a
  // kernel here lays them out in dst's strides. No kernel reads another GPU's
  // memory, which would need peer access that the hardware may not allow.
  Tensor* landed = nullptr;
  AOTIRT_TRY(copy_to_device(src, on->device, on, &landed));
  aotirt_status status = copy_device_to_device(dst, *landed, on);
  delete landed;  // stream-ordered: freed on `on`, after the kernel that reads it
  return status;
}

aotirt_status tensor_to(const Tensor& src, int32_t device_type, int32_t device_index, Stream* on, Tensor** out) {
  if (device_type != AOTIRT_DEVICE_CPU && device_type != AOTIRT_DEVICE_CUDA)
    return fail(AOTIRT_ERROR_VALUE, "device type " + std::to_string(device_type) + " is neither cpu (" +
                                        std::to_string(AOTIRT_DEVICE_CPU) + ") nor cuda (" +
                                        std::to_string(AOTIRT_DEVICE_CUDA) + ")");
  if (device_type == AOTIRT_DEVICE_CUDA) AOTIRT_TRY(check_cuda_device(device_index));
  if (on && (device_type != AOTIRT_DEVICE_CUDA || on->device != device_index))
    return fail(AOTIRT_ERROR_VALUE, "the stream is on cuda:" + std::to_string(on->device) + ", the copy goes to " +
                                        where(device_type, device_index));
  const Storage& from = *src.storage;
  if (from.device_type == device_type && (device_type == AOTIRT_DEVICE_CPU || from.device_index == device_index)) {
    *out = alias(src);  // already there: no copy
    return *out ? AOTIRT_OK : fail(AOTIRT_ERROR_MEMORY, "out of host memory");
  }
  if (from.device_type == AOTIRT_DEVICE_CUDA && device_type == AOTIRT_DEVICE_CUDA)
    return copy_to_device(src, device_index, on, out);

  // To or from the host: a new contiguous tensor that copy_between fills (an
  // upload without a wait, or the copy routine for a host destination).
  StreamRef stream;
  if (device_type == AOTIRT_DEVICE_CUDA) AOTIRT_TRY(stream_or_shared(on, device_index, &stream));
  const size_t nbytes = static_cast<size_t>(src.numel()) * src.itemsize();
  StorageRef storage;
  AOTIRT_TRY(allocate_storage(nbytes, device_type, device_index, stream, &storage));
  Tensor* copy = nullptr;
  AOTIRT_TRY(make_tensor(std::move(storage), src.ndim, src.sizes, nullptr, 0, src.dtype, stream, &copy));
  aotirt_status status = AOTIRT_OK;
  if (from.device_type == AOTIRT_DEVICE_CPU && !src.is_contiguous()) {
    // An upload reads contiguous host memory: gather the view on the host
    // first. Pageable memory is staged by CUDA before cudaMemcpyAsync
    // returns, so the gathered copy may go when this returns.
    StorageRef gathered_storage;
    Tensor* gathered = nullptr;
    status = allocate_storage(nbytes, AOTIRT_DEVICE_CPU, 0, StreamRef(), &gathered_storage);
    if (status == AOTIRT_OK)
      status = make_tensor(std::move(gathered_storage), src.ndim, src.sizes, nullptr, 0, src.dtype, StreamRef(),
                           &gathered);
    if (status == AOTIRT_OK) {
      copy_host_to_host(*gathered, src);
      status = copy_between(*copy, *gathered, stream.get());
    }
    delete gathered;
  } else {
    status = copy_between(*copy, src, stream.get());
  }
  if (status != AOTIRT_OK) {
    delete copy;
    return status;
  }
  *out = copy;
  return AOTIRT_OK;
}

bool peer_access_enabled(int consumer, int producer) {
  std::lock_guard<std::mutex> lock(peer_mutex);
  auto it = peer_pairs().find(std::make_pair(consumer, producer));
  return it != peer_pairs().end() && it->second;
}

}  // namespace aotirt
