#include <cuda_runtime.h>

#include <cstdint>

namespace {

// Writes far outside any allocation: an illegal address fault, on purpose.
__global__ void fault_kernel(float* out, int64_t n) {
  float* wild = reinterpret_cast<float*>(uintptr_t(0x10));
  if (threadIdx.x == 0) wild[blockIdx.x] = out[0] + static_cast<float>(n);
}

}  // namespace

int fault_launch(float* out, int64_t n, void* stream) {
  fault_kernel<<<1, 32, 0, static_cast<cudaStream_t>(stream)>>>(out, n);
  return cudaGetLastError();
}
