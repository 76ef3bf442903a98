// The arithmetic of one scatter or index_put write, for the CPU loops and
// the CUDA kernels alike (host and device functions), as torch's CPU
// kernels do it: float16 and bfloat16 compute in float and round each
// result back, float32 in float, float64 in double, integers in int64
// wrapping on overflow, bool as integers converted back (sum and amax are
// "or", prod and amin "and"); amax and amin propagate NaN.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "shims/indexing/indexing.h"

namespace aotirt {
namespace indexing {

template <typename T>
constexpr bool kHalfLike = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// The type a write computes in.
template <typename T>
using Acc = std::conditional_t<kHalfLike<T> || std::is_same_v<T, float>, float,
                               std::conditional_t<std::is_same_v<T, double>, double, int64_t>>;

template <typename T>
__host__ __device__ inline Acc<T> to_acc(T v) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(v);
  else return static_cast<Acc<T>>(v);
}

template <typename T>
__host__ __device__ inline T from_acc(Acc<T> v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(v);
  else if constexpr (std::is_same_v<T, bool>) return v != 0;
  else return static_cast<T>(v);
}

// scatter's scalar `value`, as torch's Scalar::to<T>() converts it.
template <typename T>
__host__ __device__ inline T from_value(double v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, bool>) return v != 0.0;
  else return static_cast<T>(v);
}

template <typename A>
__host__ __device__ inline bool is_nan(A v) {
  if constexpr (std::is_floating_point_v<A>) return v != v;
  else return false;
}

// a (op) b for Add, Mul, Max, Min (Mean adds).
template <typename A>
__host__ __device__ inline A combine(Op op, A a, A b) {
  switch (op) {
    case Op::Add:
    case Op::Mean:
      if constexpr (std::is_integral_v<A>)
        return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
      else
        return a + b;
    case Op::Mul:
      if constexpr (std::is_integral_v<A>)
        return static_cast<A>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
      else
        return a * b;
    case Op::Max:
      if (is_nan(a) || is_nan(b)) return is_nan(a) ? a : b;
      return a < b ? b : a;
    case Op::Min:
      if (is_nan(a) || is_nan(b)) return is_nan(a) ? a : b;
      return b < a ? b : a;
    default:
      return b;  // Assign
  }
}

// What a scattered-to element starts from when include_self is false.
template <typename T>
__host__ __device__ inline T identity(Op op) {
  constexpr bool floating = std::is_floating_point_v<T> || kHalfLike<T>;
  switch (op) {
    case Op::Mul:
      return from_acc<T>(1);
    case Op::Max:
      if constexpr (floating) return from_acc<T>(-INFINITY);
      else if constexpr (std::is_same_v<T, bool>) return false;
      else if constexpr (std::is_signed_v<T>) return static_cast<T>(static_cast<std::make_unsigned_t<T>>(1) << (sizeof(T) * 8 - 1));
      else return static_cast<T>(0);
    case Op::Min:
      if constexpr (floating) return from_acc<T>(INFINITY);
      else if constexpr (std::is_same_v<T, bool>) return true;
      else if constexpr (std::is_signed_v<T>) return static_cast<T>(~(static_cast<std::make_unsigned_t<T>>(1) << (sizeof(T) * 8 - 1)));
      else return static_cast<T>(~static_cast<T>(0));
    default:
      return from_acc<T>(0);  // Add, Mean
  }
}

// Mean's last step: the sum over `count` values (count > 0); integers divide
// rounding down, as torch's div_(count, "floor").
template <typename T>
__host__ __device__ inline T divide(T sum, int64_t count) {
  using A = Acc<T>;
  const A a = to_acc(sum);
  if constexpr (std::is_integral_v<A>) {
    A q = a / count;
    if (a % count != 0 && a < 0) --q;
    return from_acc<T>(q);
  } else {
    return from_acc<T>(a / static_cast<A>(count));
  }
}

}  // namespace indexing
}  // namespace aotirt
