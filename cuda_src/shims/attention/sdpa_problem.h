// The description of one scaled-dot-product attention problem, which every
// path reads (sdpa.h declares the CPU loops and the CUDA kernel; the other
// CUDA paths have headers of their own). Host-only: no CUDA header, so
// host-side checks of the paths' plans include it alone.
#pragma once

#include <cstdint>

#include "aotirt/aotirt.h"

namespace aotirt {
namespace attention {

// Which keys a causal query row i sees: keys j <= i + offset, where offset is
// 0 (the mask aligned to the top left, as torch's math, efficient, cuDNN and
// CPU kernels do) or kv_len - q_len (bottom right, as the flash kernel does;
// the two agree when q_len == kv_len).
enum Causal : int32_t { kNotCausal = 0, kTopLeft = 1, kBottomRight = 2 };

// Everything the loops read, passed to the CUDA kernel by value. Strides are
// in elements, indexed [batch, head, row, column]; a broadcast bias dimension
// has stride 0. Query head h reads key/value head h / (heads / kv_heads)
// (grouped-query attention; kv_heads == heads is plain multi-head).
struct Problem {
  int64_t batch = 0, heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_dim = 0, value_dim = 0;
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* bias = nullptr;  // nullptr: no bias
  void* out = nullptr;
  void* lse = nullptr;         // nullptr: no log-sum-exp wanted
  int64_t q_stride[4] = {}, k_stride[4] = {}, v_stride[4] = {}, bias_stride[4] = {}, out_stride[4] = {};
  int64_t lse_stride[3] = {};  // [batch, head, row]
  // Entries after q_len in each (batch, head) row of lse that get +inf: the
  // efficient kernel pads its logsumexp to a multiple of 32 rows that way.
  int64_t lse_padding = 0;
  int32_t dtype = AOTIRT_DTYPE_FLOAT32;       // of q, k, v and out
  int32_t bias_dtype = AOTIRT_DTYPE_FLOAT32;  // floating (added) or bool (true: attend)
  int32_t lse_dtype = AOTIRT_DTYPE_FLOAT32;   // float32, or float64 on the CPU for float64 inputs
  int32_t causal = kNotCausal;
  double scale = 1.0;
};

}  // namespace attention
}  // namespace aotirt
