// float32 attention on CUTLASS's fused multi-head attention kernel
// (CUTLASS's examples/41_fused_multi_head_attention, kernel_forward.h): the
// memory-efficient kernel that torch's own efficient attention is built
// from. On sm_80 and newer it multiplies float32 on the tensor cores as three
// TF32 products (CUTLASS's OpMultiplyAddFastF32), which keeps float32's
// accuracy, and it never writes the scores out: query tiles stream the keys
// through an online softmax. The cuBLAS path (sdpa_cublas.h) writes
// [rows, keys] scores to memory and multiplies on the CUDA cores; it stays
// for what this kernel does not take (grouped-query heads, masks, layouts).
//
// Built only where the CUTLASS headers were found (setup.py,
// AOTIRT_HAVE_CUTLASS_FMHA); elsewhere fmha_takes is always false.
#pragma once

#include "shims/attention/sdpa.h"
#include "runtime/stream.h"

namespace aotirt {
namespace attention {

// Whether the fused kernel takes `p` on `device`: a build with CUTLASS, a
// device of compute capability 8.0 or newer; float32 throughout; as many
// key/value heads as query heads; no bias; no causal mask, one aligned to
// the top left, or one aligned to the bottom right where every row sees a
// key; query, key and value rows with a unit column stride, their row, head
// and batch strides and the head sizes multiples of 4 elements, the data
// 16-byte aligned; the output laid out [batch, rows, heads, value] (what the
// efficient and flash shims allocate: torch's meta layout), and the
// log-sum-exp none, or [batch, heads, rows rounded up to 32] with the
// shim's padding exactly that. Sizes within the kernel's 32-bit fields and
// its grid (heads and batch below 65536).
bool fmha_takes(const Problem& p, int device);

// Queued on `stream` (the current device's, ordered after the inputs'
// producers); never waits, allocates nothing, capturable into a CUDA graph.
aotirt_status run_fmha(const Problem& p, Stream* stream);

}  // namespace attention
}  // namespace aotirt
