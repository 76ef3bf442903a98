// Atomic read-modify-writes of one element of any dtype the indexing
// kernels take: the hardware's atomicAdd where it has one for the type
// (float, double, int32, int64; float16 from sm_70, bfloat16 from sm_80),
// atomicMax/atomicMin for int32 and int64, else a compare-and-swap loop on
// the aligned 32- or 64-bit word that holds the element (1- and 2-byte
// elements share their word with neighbours, which the loop rewrites
// unchanged: only this kernel's own atomic writes may touch that word
// meanwhile, which holds for out's elements within one call).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "shims/indexing/element_ops.h"

namespace aotirt {
namespace indexing {

template <typename To, typename From>
__device__ inline To bits_as(From v) {
  static_assert(sizeof(To) == sizeof(From), "same width");
  To t;
  memcpy(&t, &v, sizeof(To));
  return t;
}

// *address = from_acc(combine(op, to_acc(*address), to_acc(v))), atomically.
template <typename T>
__device__ inline void atomic_combine_cas(T* address, Op op, T v) {
  auto next = [&](T current) { return from_acc<T>(combine(op, to_acc(current), to_acc(v))); };
  if constexpr (sizeof(T) == 8) {
    auto* word = reinterpret_cast<unsigned long long*>(address);
    unsigned long long old = *word, assumed;
    do {
      assumed = old;
      old = atomicCAS(word, assumed, bits_as<unsigned long long>(next(bits_as<T>(assumed))));
    } while (assumed != old);
  } else if constexpr (sizeof(T) == 4) {
    auto* word = reinterpret_cast<unsigned int*>(address);
    unsigned int old = *word, assumed;
    do {
      assumed = old;
      old = atomicCAS(word, assumed, bits_as<unsigned int>(next(bits_as<T>(assumed))));
    } while (assumed != old);
  } else {
    using Bits = std::conditional_t<sizeof(T) == 2, uint16_t, uint8_t>;
    const uintptr_t at = reinterpret_cast<uintptr_t>(address);
    auto* word = reinterpret_cast<unsigned int*>(at & ~static_cast<uintptr_t>(3));
    const unsigned shift = static_cast<unsigned>(at & 3) * 8;
    const unsigned mask = static_cast<unsigned>(static_cast<Bits>(~Bits{0})) << shift;
    unsigned int old = *word, assumed;
    do {
      assumed = old;
      const T current = bits_as<T>(static_cast<Bits>((assumed & mask) >> shift));
      const unsigned replaced = static_cast<unsigned>(bits_as<Bits>(next(current))) << shift;
      old = atomicCAS(word, assumed, (assumed & ~mask) | replaced);
    } while (assumed != old);
  }
}

template <typename T>
__device__ inline void atomic_combine(T* address, Op op, T v) {
  if (op == Op::Add || op == Op::Mean) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int32_t>) {
      atomicAdd(address, v);
      return;
    } else if constexpr (std::is_same_v<T, int64_t>) {
      atomicAdd(reinterpret_cast<unsigned long long*>(address), static_cast<unsigned long long>(v));
      return;
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
    else if constexpr (std::is_same_v<T, __half>) {
      atomicAdd(address, v);
      return;
    }
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      atomicAdd(address, v);
      return;
    }
#endif
  }
  if constexpr (std::is_same_v<T, int32_t>) {
    if (op == Op::Max) return (void)atomicMax(address, v);
    if (op == Op::Min) return (void)atomicMin(address, v);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    if (op == Op::Max) return (void)atomicMax(reinterpret_cast<long long*>(address), static_cast<long long>(v));
    if (op == Op::Min) return (void)atomicMin(reinterpret_cast<long long*>(address), static_cast<long long>(v));
  }
  atomic_combine_cas(address, op, v);
}

}  // namespace indexing
}  // namespace aotirt
