// Addressing for the CUDA sorts: where each line along the sorted dim
// starts, with the divisions done by a multiply and a shift.
//
// Why not plain `/` and `%`: the per-element kernels divide an element's
// flat number by the line length and a line number by every other size;
// 64-bit integer division is a software routine of tens of instructions on
// the GPU, the largest cost of an otherwise memory-bound kernel. Every
// number divided here is below 2^31 (run_cuda refuses more elements than
// INT_MAX, and every size is at most the element count), so the unsigned
// 32-bit magic-number division of Granlund and Montgomery, as torch's
// IntDivider<unsigned int> does it, is exact.
#pragma once

#include <cstdint>
#include <type_traits>

#include "runtime/tensor.h"

namespace aotirt {
namespace sort {

// n / d and n % d for 0 <= n <= INT32_MAX, 1 <= d <= INT32_MAX.
struct FastDivmod {
  uint32_t divisor = 1;
  uint32_t multiplier = 1;  // the low 32 bits of 2^32 * (2^shift - d) / d + 1 (always below 2^32)
  uint32_t shift = 0;       // ceil(log2 d)

  FastDivmod() = default;
  explicit FastDivmod(uint32_t d) : divisor(d) {
    while (shift < 32 && (uint32_t{1} << shift) < d) ++shift;
    const uint64_t one = 1;
    multiplier = static_cast<uint32_t>(((one << 32) * ((one << shift) - d)) / d + 1);
  }

  __device__ __forceinline__ uint32_t div(uint32_t n) const {
    // t <= n < 2^31, so t + n does not overflow.
    return (__umulhi(n, multiplier) + n) >> shift;
  }
};

// Where the lines along `dim` of a tensor start: line l's first element is
// at start(l) (the other dimensions, in order, as digits of l), its j-th
// at start(l) + j * step. Built only for tensors with at least one element
// (every size is then at least 1).
struct Lines {
  int ndim = 0;
  FastDivmod sizes[AOTIRT_MAX_DIMS];
  int64_t strides[AOTIRT_MAX_DIMS] = {};
  int64_t step = 0;

  __device__ __forceinline__ int64_t start(uint32_t line) const {
    int64_t offset = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const uint32_t q = sizes[d].div(line);
      offset += static_cast<int64_t>(line - q * sizes[d].divisor) * strides[d];
      line = q;
    }
    return offset;
  }
};

inline Lines lines_of(const Tensor& t, int64_t dim) {
  Lines l;
  for (int64_t d = 0; d < t.ndim; ++d) {
    if (d == dim) continue;
    l.sizes[l.ndim] = FastDivmod(static_cast<uint32_t>(t.sizes[d]));
    l.strides[l.ndim] = t.strides[d];
    ++l.ndim;
  }
  l.step = t.ndim ? t.strides[dim] : 0;
  return l;
}

// The unsigned integer of an element's size: what a copy of the element
// moves (values are copied from the input bit for bit).
template <typename T>
using Element = std::conditional_t<sizeof(T) == 1, uint8_t,
                                   std::conditional_t<sizeof(T) == 2, uint16_t,
                                                      std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

}  // namespace sort
}  // namespace aotirt
