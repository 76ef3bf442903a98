// float32 attention as cuBLAS batched GEMMs around a softmax kernel, for the
// CUDA SDPA shims (attention.cpp dispatches here first for float32):
//
//   S = scale * Q K^T          one batched GEMM, float math (no TF32)
//   P = softmax(S + bias, mask) in place, and the log-sum-exp when asked for
//   out = P V                  one batched GEMM, written into out's strides
//
// S lives in a workspace from the stream-ordered pool ([batch, heads, rows,
// kv_len] floats). Where it would pass a bound (256 MiB, or
// AOTIRT_ATTENTION_WORKSPACE_MIB, read once), the query rows go in chunks that
// reuse it one after the other on the stream. Under a causal mask a chunk's
// GEMMs and softmax cover only the keys its last row sees, and the rows go
// in several chunks where that skips enough of the masked triangle to pay
// for the launches (cublas_plan::schedule_rows; AOTIRT_ATTENTION_CAUSAL_CHUNKS
// sets the count, for measuring).
//
// Grouped-query heads (kv_heads < heads) share a key/value head among
// `group` query heads. When the query's and the output's heads of one group
// are evenly spaced rows (a contiguous [B, H, L, E] query, or L == 1), the
// group is folded into the GEMMs' rows: one matrix of group * L rows per
// key/value head, so each key and value matrix is read by one GEMM. The
// matrices of every (batch, head) then go in as one strided batch when their
// addresses are evenly spaced, else as arrays of pointers (cublasGemmBatchedEx)
// that a tiny kernel writes into the workspace on the stream: one launch
// either way, never a loop of calls on the host, and capturable as a graph.
//
// Nothing here waits for the GPU or allocates outside the pool.
#pragma once

#include "shims/attention/sdpa.h"

namespace aotirt {
namespace attention {

// Whether run_cublas computes `p`: float32 query/key/value/output (and a
// float32 log-sum-exp), every length and head size above 0 and within
// cuBLAS's 32-bit sizes, and each [rows, head size] matrix of query, key,
// value and output with a unit stride in one of its two dimensions (one
// leading dimension describes it). A pure check: it loads nothing.
bool cublas_takes(const Problem& p);

// Queued on `stream` (the current device's; the caller has ordered it after
// the inputs' producers). Never waits. Fails with an AOTIRT_ERROR_AOTI naming
// the cuBLAS call and its status when cuBLAS cannot be loaded or a call fails.
aotirt_status run_cublas(const Problem& p, Stream* stream);

// With AOTIRT_LOG=debug, prints to stderr, once per shape, which path
// computes attention problems of p's shape (`path` names it); else nothing.
void log_path(const Problem& p, const char* path);

}  // namespace attention
}  // namespace aotirt
