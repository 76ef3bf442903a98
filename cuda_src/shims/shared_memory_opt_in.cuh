// Dynamic shared memory past 48 KiB needs an opt-in per kernel and device
// (cudaFuncSetAttribute). The shims whose kernels use more make it on the
// first launch on each device: a host-side attribute, allowed while the
// stream is being captured into a CUDA graph. For .cu files (it names a
// __global__ function).

#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

namespace aotirt {

// `kKernel` allowed `bytes` of dynamic shared memory on `device`: asked of
// CUDA once per device (devices 0 to 63 are remembered; others ask each
// launch). One kernel takes one `bytes` value: the memo is the kernel's.
template <auto kKernel>
cudaError_t allow_dynamic_shared_memory(int device, size_t bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  static std::atomic<uint64_t> done{0};
  const uint64_t bit = device >= 0 && device < 64 ? uint64_t{1} << device : 0;
  if (bit && (done.load(std::memory_order_acquire) & bit)) return cudaSuccess;
  const cudaError_t status =
      cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (status == cudaSuccess && bit) done.fetch_or(bit, std::memory_order_acq_rel);
  return status;
}

}  // namespace aotirt
