#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/errors.h"
#include "shims/libs/gpu_hold.h"

namespace aotirt {
namespace {

constexpr double kMostUs = 100000;  // a hold is a few ms at most: longer is a caller's mistake
// The SM clock's cycles per ns that end a hold whose timer does not
// advance: no SM clock reaches 8 GHz, so a working timer always ends it
// first, and a stuck one cannot hang the stream.
constexpr long long kCyclesPerNsBound = 8;

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

// %globaltimer, not clock64 alone: the SM clock changes with load and
// power, the global timer counts nanoseconds.
__global__ void hold(unsigned long long ns, long long most_cycles) {
  const unsigned long long start = global_ns();
  const long long first = clock64();
  while (global_ns() - start < ns && clock64() - first < most_cycles) {
  }
}

}  // namespace

aotirt_status gpu_hold(cudaStream_t stream, double microseconds) {
  if (!(microseconds > 0)) return AOTIRT_OK;
  if (microseconds > kMostUs) microseconds = kMostUs;
  const unsigned long long ns = static_cast<unsigned long long>(microseconds * 1000);
  hold<<<1, 1, 0, stream>>>(ns, static_cast<long long>(ns) * kCyclesPerNsBound);
  AOTIRT_CUDA_TRY(cudaGetLastError());
  return AOTIRT_OK;
}

}  // namespace aotirt
