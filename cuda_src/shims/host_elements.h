// Reading and writing tensor elements of any supported dtype on the host, for
// the CPU shims' plain loops: each loop is written once as a template over
// the element type, and `dispatch_dtype` picks the instance at run time.
#pragma once

#include <cuda_bf16.h>  // host-callable conversions, rounding as the GPU does
#include <cuda_fp16.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "runtime/dtypes.h"
#include "runtime/errors.h"
#include "runtime/tensor.h"

namespace aotirt {
namespace host {

template <typename T>
inline double to_double(T v) { return static_cast<double>(v); }
inline double to_double(__half v) { return static_cast<double>(__half2float(v)); }
inline double to_double(__nv_bfloat16 v) { return static_cast<double>(__bfloat162float(v)); }
inline double to_double(bool v) { return v ? 1.0 : 0.0; }

// Conversion as a C++ cast does it (torch's casts on the CPU do the same):
// floating values to integers truncate toward zero.
template <typename T>
inline T from_double(double v) { return static_cast<T>(v); }
template <>
inline __half from_double<__half>(double v) { return __float2half_rn(static_cast<float>(v)); }
template <>
inline __nv_bfloat16 from_double<__nv_bfloat16>(double v) { return __float2bfloat16_rn(static_cast<float>(v)); }
template <>
inline bool from_double<bool>(double v) { return v != 0.0; }

// Callable from device code too where nvcc compiles the file: CUDA kernels
// convert elements exactly as the CPU loops do.
#if defined(__CUDACC__)
#define AOTIRT_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define AOTIRT_HOST_DEVICE inline
#endif

// One element type to another as torch's static_cast-style conversions do it
// (integers stay exact; float16 and bfloat16 go through float).
template <typename To, typename From>
AOTIRT_HOST_DEVICE To cast(From v) {
  if constexpr (std::is_same_v<From, __half>) {
    return cast<To>(__half2float(v));
  } else if constexpr (std::is_same_v<From, __nv_bfloat16>) {
    return cast<To>(__bfloat162float(v));
  } else if constexpr (std::is_same_v<To, __half>) {
    return __float2half_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From{};
  } else {
    return static_cast<To>(v);
  }
}

// Calls fn(T{}) with T the C++ type of `dtype`; false (nothing called) for a
// dtype without one here.
template <typename Fn>
bool dispatch_dtype(int32_t dtype, Fn&& fn) {
  switch (dtype) {
    case AOTIRT_DTYPE_UINT8: fn(uint8_t{}); return true;
    case AOTIRT_DTYPE_INT8: fn(int8_t{}); return true;
    case AOTIRT_DTYPE_INT16: fn(int16_t{}); return true;
    case AOTIRT_DTYPE_INT32: fn(int32_t{}); return true;
    case AOTIRT_DTYPE_INT64: fn(int64_t{}); return true;
    case AOTIRT_DTYPE_FLOAT16: fn(__half{}); return true;
    case AOTIRT_DTYPE_FLOAT32: fn(float{}); return true;
    case AOTIRT_DTYPE_FLOAT64: fn(double{}); return true;
    case AOTIRT_DTYPE_BOOL: fn(bool{}); return true;
    case AOTIRT_DTYPE_BFLOAT16: fn(__nv_bfloat16{}); return true;
    default: return false;
  }
}

// Element offset of the element at `index` (one per dimension) of `t`.
inline int64_t offset_at(const Tensor& t, const int64_t* index) {
  int64_t offset = 0;
  for (int64_t d = 0; d < t.ndim; ++d) offset += index[d] * t.strides[d];
  return offset;
}

// Fails unless `t` is a CPU tensor: the CPU shims read its memory directly.
inline aotirt_status require_cpu(const Tensor& t, const char* shim, const char* what) {
  if (t.storage && t.storage->device_type == AOTIRT_DEVICE_CPU) return AOTIRT_OK;
  return fail(AOTIRT_ERROR_VALUE, std::string(shim) + ": " + what + " must be a CPU tensor");
}

}  // namespace host
}  // namespace aotirt
