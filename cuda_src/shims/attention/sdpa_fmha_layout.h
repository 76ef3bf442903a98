// Which attention problems CUTLASS's fused kernel (sdpa_fmha.cu) can address
// as they lie in memory, and the fields of its Params that say where: host
// code only, so tests/shims/sdpa_fmha_layout_check.cpp checks the mapping
// on the CPU against the kernel's own address arithmetic.
//
// The kernel (kernel_forward.h, Params::advance_to_block) reads element c of
// row m of head h of batch b at
//   query  b * q_strideB + m * q_strideM + h * q_strideH + c   (key, value alike)
// and writes
//   output (b * num_queries + m) * o_strideM + h * head_dim_value + c
//   lse    (b * num_heads + h) * lse_rows + m, with lse_rows = num_queries
//          rounded up to 32 and +inf in rows num_queries .. lse_rows - 1.
// and adds to the scores (scale * q k^T) of row m, key j
//   bias   b * bias_strideB + h * bias_strideH + m * bias_strideM + j
// With one query row and key and value heads of stride 0 it takes another
// path (the heads as rows, the causal mask dropped): that is left to cuBLAS.
#pragma once

#include <cstdint>
#include <limits>

#include "shims/attention/sdpa_problem.h"

namespace aotirt {
namespace attention {
namespace fmha_layout {

constexpr int64_t kAlign = 4;           // elements: the aligned kernels' 128-bit loads of float
constexpr int64_t kLseRows = 32;        // the kernel pads each head's log-sum-exp to a multiple of this
constexpr int64_t kMaxGridYZ = 65535;   // heads and batches are the grid's y and z
constexpr int64_t kMaxHeadSize = 65536; // the largest instance's bound (sdpa_fmha.cu)

inline bool fits_int32(int64_t v) { return v >= 0 && v <= std::numeric_limits<int32_t>::max(); }
inline bool aligned(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % (kAlign * sizeof(float)) == 0; }
inline int64_t lse_rows(int64_t rows) { return (rows + kLseRows - 1) / kLseRows * kLseRows; }

// q, k or v: unit columns; row, head and batch strides in whole 16-byte
// steps, the first two within the kernel's 32-bit fields.
inline bool operand_ok(const void* data, const int64_t* stride) {
  return data && aligned(data) && stride[3] == 1 && stride[2] % kAlign == 0 && stride[1] % kAlign == 0 &&
         stride[0] % kAlign == 0 && fits_int32(stride[2]) && fits_int32(stride[1]) && stride[0] >= 0;
}

// A bias the kernel can read in place: float32 (a bool mask is cuBLAS's),
// unit key stride, 16-byte aligned rows whose stride fits its 32-bit field
// (with the row offset it computes in 32 bits); heads and batches at any
// multiple of 4, broadcast ones at 0. A bias broadcast over rows (row stride
// 0) and one beside a wanted log-sum-exp stay on cuBLAS: the kernel writes
// -inf as the log-sum-exp of a row whose every key the bias masks, where
// torch's kernel and aotirt's cuBLAS path write 0.
inline bool bias_ok(const Problem& p) {
  if (!p.bias) return true;
  const int64_t* s = p.bias_stride;
  return p.bias_dtype == AOTIRT_DTYPE_FLOAT32 && !p.lse && aligned(p.bias) && s[3] == 1 && s[2] > 0 &&
         s[2] % kAlign == 0 && s[1] >= 0 && s[1] % kAlign == 0 && s[0] >= 0 && s[0] % kAlign == 0 &&
         fits_int32(p.q_len * s[2] + p.kv_len);
}

// Everything of fmha_takes but the device and AOTIRT_ATTENTION_FUSED.
inline bool takes(const Problem& p) {
  if (p.dtype != AOTIRT_DTYPE_FLOAT32 || !bias_ok(p) || p.heads != p.kv_heads) return false;
  if (p.batch < 1 || p.heads < 1 || p.q_len < 1 || p.kv_len < 1 || p.head_dim < 1 || p.value_dim < 1) return false;
  if (p.batch > kMaxGridYZ || p.heads > kMaxGridYZ || !fits_int32(lse_rows(p.q_len)) || !fits_int32(p.kv_len))
    return false;
  if (p.head_dim % kAlign || p.value_dim % kAlign || p.head_dim > kMaxHeadSize || p.value_dim > kMaxHeadSize)
    return false;
  if (p.causal == kBottomRight && p.kv_len < p.q_len) return false;  // rows with no key: cuBLAS's zeros
  if (!operand_ok(p.q, p.q_stride) || !operand_ok(p.k, p.k_stride) || !operand_ok(p.v, p.v_stride)) return false;
  if (p.q_len == 1 && p.k_stride[1] == 0 && p.v_stride[1] == 0) return false;  // the kernel's other path
  // The kernel multiplies these in 32 bits (the block's head and batch
  // indices are unsigned ints).
  if (!fits_int32(p.heads * p.q_stride[1]) || !fits_int32(p.heads * p.k_stride[1]) ||
      !fits_int32(p.heads * p.v_stride[1]) || !fits_int32(p.batch * p.q_len) ||
      (p.lse && !fits_int32(p.batch * p.heads * lse_rows(p.q_len))))
    return false;
  const int64_t row = p.out_stride[2];
  if (!p.out || !aligned(p.out) || p.out_stride[3] != 1 || p.out_stride[1] != p.value_dim ||
      row < p.heads * p.value_dim || row % kAlign || !fits_int32(row) || p.out_stride[0] != p.q_len * row)
    return false;
  if (p.lse) {
    const int64_t rows = lse_rows(p.q_len);
    if (p.lse_dtype != AOTIRT_DTYPE_FLOAT32 || p.lse_stride[2] != 1 || p.lse_stride[1] != rows ||
        p.lse_stride[0] != p.heads * rows || p.lse_padding != rows - p.q_len)
      return false;
  }
  return true;
}

// The Params fields that place the data, for a problem `takes` accepts.
struct Fields {
  int32_t num_queries, num_keys, num_heads, num_batches, head_dim, head_dim_value;
  int32_t q_strideM, q_strideH, k_strideM, k_strideH, v_strideM, v_strideH, o_strideM, bias_strideM;
  int64_t q_strideB, k_strideB, v_strideB, bias_strideH, bias_strideB;
};

inline Fields fields(const Problem& p) {
  Fields f;
  f.num_queries = static_cast<int32_t>(p.q_len);
  f.num_keys = static_cast<int32_t>(p.kv_len);
  f.num_heads = static_cast<int32_t>(p.heads);
  f.num_batches = static_cast<int32_t>(p.batch);
  f.head_dim = static_cast<int32_t>(p.head_dim);
  f.head_dim_value = static_cast<int32_t>(p.value_dim);
  f.q_strideM = static_cast<int32_t>(p.q_stride[2]), f.q_strideH = static_cast<int32_t>(p.q_stride[1]);
  f.k_strideM = static_cast<int32_t>(p.k_stride[2]), f.k_strideH = static_cast<int32_t>(p.k_stride[1]);
  f.v_strideM = static_cast<int32_t>(p.v_stride[2]), f.v_strideH = static_cast<int32_t>(p.v_stride[1]);
  f.q_strideB = p.q_stride[0], f.k_strideB = p.k_stride[0], f.v_strideB = p.v_stride[0];
  f.o_strideM = static_cast<int32_t>(p.out_stride[2]);
  // No bias: zeros, which the kernel never reads.
  f.bias_strideM = static_cast<int32_t>(p.bias ? p.bias_stride[2] : 0);
  f.bias_strideH = p.bias ? p.bias_stride[1] : 0;
  f.bias_strideB = p.bias ? p.bias_stride[0] : 0;
  return f;
}

}  // namespace fmha_layout
}  // namespace attention
}  // namespace aotirt
