// How float32 attention maps onto cuBLAS batched GEMMs (sdpa_cublas.cu):
// pure index arithmetic, kept apart from the CUDA calls so that a host-only
// test (tests/shims/sdpa_cublas_plan_check.cpp) runs every case through an
// emulated cuBLAS without a GPU, as gemm_layout.h is checked.
//
// The scores of one chunk of query rows are a contiguous [batch, heads,
// rows, ld] float workspace over the chunk's keys (ld: their count rounded
// up to 4, for aligned rows). Without a causal mask a chunk covers every
// key; under one, only the keys its last row sees (chunk_keys): the GEMMs
// skip the masked triangle beyond, and the softmax treats every key past a
// row's own last as masked.
// gemm_layout.h maps each GEMM's row-major matrices onto cuBLAS's
// column-major ones, as for the matmul shims:
//   S[rows, kv_len] = Q[rows, E] K^T[E, kv_len]    (cuBLAS: S^T = K Q^T)
//   out[rows, Ev]  = P[rows, kv_len] V[kv_len, Ev]  (out^T = V^T P^T, or out = P V)
// The batch of matrices runs over (batch b, key/value head hk, head of the
// group j), query head h = hk * group + j. The group folds into the GEMMs'
// rows when the query's and the output's rows of a group's heads are evenly
// spaced (one matrix of group * rows rows per key/value head); the batch is
// one strided batch when every operand's matrices are evenly spaced in the
// flattened order, else pointer arrays.
#pragma once

#include <climits>
#include <cstdint>

#include "shims/matmul/gemm_layout.h"

#if defined(__CUDACC__)
#define AOTIRT_HOST_DEVICE __host__ __device__
#else
#define AOTIRT_HOST_DEVICE
#endif

namespace aotirt {
namespace attention {
namespace cublas_plan {

// What the plan reads of an attention Problem (attention.h): sizes, and
// element strides indexed [batch, head, row, column].
struct Shape {
  int64_t batch = 0, heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_dim = 0, value_dim = 0;
  int64_t q_stride[4] = {}, k_stride[4] = {}, v_stride[4] = {}, out_stride[4] = {};
  int32_t causal = 0;  // attention::Causal: 0 none, 1 top left, 2 bottom right
};

// Under a causal mask query row i sees keys j <= i + causal_offset(s).
inline int64_t causal_offset(const Shape& s) { return s.causal == 2 ? s.kv_len - s.q_len : 0; }

// The keys the GEMMs of the chunk of query rows before `row_end` cover:
// every key, or under a causal mask those its last row sees (keys before
// row_end + offset), one at least (the rows of a chunk that sees none still
// go through the GEMMs; the softmax gives them zeros).
inline int64_t chunk_keys(const Shape& s, int64_t row_end) {
  if (!s.causal) return s.kv_len;
  const int64_t n = row_end + causal_offset(s);
  return n < 1 ? 1 : (n < s.kv_len ? n : s.kv_len);
}

// The GEMMs' operands, in the order of the pointer arrays.
enum Matrix { kQ = 0, kK, kV, kS, kOut, kOperands };

// The batch of matrices: axes (b, hk, j), each operand's element strides
// along them and the offset of its first matrix from its data (the scores'
// is 0: each chunk starts the workspace afresh).
struct Batch {
  int64_t size[3] = {1, 1, 1};
  int64_t stride[kOperands][3] = {};
  int64_t offset[kOperands] = {};

  // Operand o's matrix n, the axes flattened b outermost, j innermost.
  AOTIRT_HOST_DEVICE int64_t at(int o, int64_t n) const {
    const int64_t j = n % size[2];
    const int64_t hk = n / size[2] % size[1];
    const int64_t b = n / (size[2] * size[1]);
    return offset[o] + b * stride[o][0] + hk * stride[o][1] + j * stride[o][2];
  }
};

// One chunk of query rows as two cuBLAS calls.
struct Chunk {
  int64_t rows = 0;          // query rows
  int64_t keys = 0;          // the keys the GEMMs cover: [0, keys)
  int64_t ld = 0;            // of the scores' rows: keys rounded up to 4
  int64_t m = 0;             // the GEMMs' rows: `rows`, or group * rows when the group is folded in
  bool folded = false;
  gemm_layout::Plan qk, pv;  // S = Q K^T into kS, out = P V into kOut
  int qk_x = kK, qk_y = kQ;  // the operands that are cuBLAS's A and B
  int pv_x = kV, pv_y = kS;
  Batch batch;
  int64_t count = 1;         // matrices per GEMM
  bool strided = false;      // evenly spaced: matrix n of operand o at offset[o] + n * batch_stride[o]
  int64_t batch_stride[kOperands] = {};
};

inline bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

// `keys` rounded up to 4 floats: 16-byte aligned score rows.
inline int64_t keys_ld(int64_t keys) { return (keys + 3) / 4 * 4; }
inline int64_t scores_ld(const Shape& s) { return keys_ld(s.kv_len); }

// The two GEMMs of matrices with `m` rows over c->keys keys, the query's and
// the output's rows `q_row` and `o_row` apart; false when an operand would
// need a copy (no single leading dimension describes it) or a size passes
// cuBLAS's ints.
inline bool plan_gemms(const Shape& s, int64_t m, int64_t q_row, int64_t o_row, Chunk* c) {
  const int64_t q[3] = {0, q_row, s.q_stride[3]};
  const int64_t k_t[3] = {0, s.k_stride[3], s.k_stride[2]};  // K^T: [E, keys]
  const int64_t scores[3] = {0, c->ld, 1};
  const int64_t v[3] = {0, s.v_stride[2], s.v_stride[3]};
  const int64_t o[3] = {0, o_row, s.out_stride[3]};
  c->qk = gemm_layout::plan(1, m, c->keys, s.head_dim, q, k_t, scores, false);
  c->pv = gemm_layout::plan(1, m, s.value_dim, c->keys, scores, v, o, false);
  for (const gemm_layout::Plan* g : {&c->qk, &c->pv}) {
    if (g->copy_a || g->copy_b || g->scratch) return false;
    for (int64_t n : {g->m, g->n, g->k, g->x.ld, g->y.ld, g->c.ld})
      if (!fits_int(n)) return false;
  }
  return true;
}

// The matrices as one strided batch: when every operand's matrices are
// evenly spaced in the flattened order (b, hk, j), with non-negative steps.
inline void flatten(Chunk* c) {
  c->strided = true;
  for (int o = 0; o < kOperands; ++o) c->batch_stride[o] = 0;
  int64_t inner = 1;  // matrices along the axes already taken
  for (int axis = 2; axis >= 0; --axis) {
    if (c->batch.size[axis] == 1) continue;
    for (int o = 0; o < kOperands; ++o) {
      const int64_t step = c->batch.stride[o][axis];
      if (step < 0 || (inner > 1 && step != inner * c->batch_stride[o])) c->strided = false;
      if (inner == 1) c->batch_stride[o] = step;
    }
    inner *= c->batch.size[axis];
  }
  c->count = inner;
}

// The chunk of `rows` query rows from `row0` over keys [0, keys); false
// when cuBLAS cannot take it.
inline bool plan_chunk_keys(const Shape& s, int64_t rows, int64_t row0, int64_t keys, Chunk* c) {
  const int64_t group = s.heads / s.kv_heads, ld = keys_ld(keys);
  c->rows = rows;
  c->keys = keys;
  c->ld = ld;
  // The heads of a group fold into the rows when their rows, one head after
  // the other, are evenly spaced in the query and the output, as they are
  // in the scores. (A single row needs nothing: the heads are its rows.)
  const bool q_even = rows == 1 || s.q_stride[1] == rows * s.q_stride[2];
  const bool o_even = rows == 1 || s.out_stride[1] == rows * s.out_stride[2];
  c->folded = group > 1 && q_even && o_even && fits_int(group * rows) &&
              plan_gemms(s, group * rows, rows == 1 ? s.q_stride[1] : s.q_stride[2],
                         rows == 1 ? s.out_stride[1] : s.out_stride[2], c);
  if (c->folded) {
    c->m = group * rows;
  } else {
    c->m = rows;
    if (!plan_gemms(s, rows, s.q_stride[2], s.out_stride[2], c)) return false;
  }
  // transposed: cuBLAS computes the transpose (S^T = K Q^T, out^T = V^T P^T).
  c->qk_x = c->qk.transposed ? kK : kQ;
  c->qk_y = c->qk.transposed ? kQ : kK;
  c->pv_x = c->pv.transposed ? kV : kS;
  c->pv_y = c->pv.transposed ? kS : kV;
  Batch& b = c->batch;
  b.size[0] = s.batch;
  b.size[1] = s.kv_heads;
  b.size[2] = c->folded ? 1 : group;
  const int64_t q[3] = {s.q_stride[0], group * s.q_stride[1], s.q_stride[1]};
  const int64_t k[3] = {s.k_stride[0], s.k_stride[1], 0};
  const int64_t v[3] = {s.v_stride[0], s.v_stride[1], 0};
  const int64_t scores[3] = {s.heads * rows * ld, group * rows * ld, rows * ld};
  const int64_t o[3] = {s.out_stride[0], group * s.out_stride[1], s.out_stride[1]};
  const int64_t* strides[kOperands] = {q, k, v, scores, o};
  for (int op = 0; op < kOperands; ++op) {
    for (int axis = 0; axis < 3; ++axis) b.stride[op][axis] = strides[op][axis];
    b.offset[op] = 0;
  }
  b.offset[kQ] = row0 * s.q_stride[2];
  b.offset[kOut] = row0 * s.out_stride[2];
  flatten(c);
  return fits_int(c->count);
}

// The chunk of `rows` query rows from `row0` over the keys they see.
inline bool plan_chunk(const Shape& s, int64_t rows, int64_t row0, Chunk* c) {
  return plan_chunk_keys(s, rows, row0, chunk_keys(s, row0 + rows), c);
}

// Query rows per chunk: as many as keep the scores of all (batch, head)
// pairs within `bound` bytes, one at least.
inline int64_t chunk_rows(const Shape& s, int64_t bound) {
  const int64_t row_bytes = s.batch * s.heads * scores_ld(s) * static_cast<int64_t>(sizeof(float));
  const int64_t rows = bound / row_bytes;
  return rows < 1 ? 1 : (rows < s.q_len ? rows : s.q_len);
}

// Query rows per chunk: `bound_rows` (chunk_rows: what the workspace bound
// allows), the fewest chunks, without a causal mask. Under one, a chunk's
// GEMMs and softmax cover only the keys its last row sees, so splitting the
// rows skips more of the masked triangle: C even chunks of a square mask
// compute (C + 1) / (2 C) of the scores (the excess over the triangle is
// the sum of the chunks' rows squared over 2, least for even chunks). Each
// chunk costs three more kernels' fill and drain, and narrow chunks starve
// the output GEMM of tiles, so the count (1 to kMaxCausalChunks, or
// `forced` when above 0) minimises a model of the GPU time,
//   scores computed * (2 (E + Ev) flops / 50 TFLOP/s + 16 bytes / 3.5 TB/s)
//   + 8 us per chunk,
// over chunks whose rows are a multiple of 64 and whose output GEMM has
// at least kMinChunkOutputs elements (about one wave of 64 x 64 tiles on
// an H100/H200). One chunk stays best for short sequences.
constexpr int64_t kMaxCausalChunks = 8;
constexpr int64_t kMinChunkOutputs = int64_t{1} << 19;

// The scores that chunks of `rows` query rows compute (the GEMMs' extent)
// for one (batch, head).
inline double chunked_scores(const Shape& s, int64_t rows) {
  double n = 0;
  for (int64_t row0 = 0; row0 < s.q_len; row0 += rows) {
    const int64_t r = rows < s.q_len - row0 ? rows : s.q_len - row0;
    n += static_cast<double>(r) * static_cast<double>(chunk_keys(s, row0 + r));
  }
  return n;
}

inline int64_t schedule_rows(const Shape& s, int64_t bound_rows, int64_t forced = 0) {
  const int64_t most = bound_rows < s.q_len ? (bound_rows < 1 ? 1 : bound_rows) : s.q_len;
  if (!s.causal || s.q_len <= 64) return most;
  auto rows_for = [&](int64_t chunks) {
    int64_t r = (s.q_len + chunks - 1) / chunks;
    r = (r + 63) / 64 * 64;
    return r < most ? r : most;
  };
  if (forced > 0) return rows_for(forced);
  if (most < s.q_len && (s.q_len + most - 1) / most >= kMaxCausalChunks) return most;  // the bound chunks finer
  const double heads = static_cast<double>(s.batch) * static_cast<double>(s.heads);
  const double us_per_score = 2.0 * static_cast<double>(s.head_dim + s.value_dim) / 50e6 + 16.0 / 3.5e6;
  const double us_per_chunk = 8.0;
  int64_t best = most;
  double best_us = -1;
  for (int64_t chunks = 1; chunks <= kMaxCausalChunks; ++chunks) {
    const int64_t rows = rows_for(chunks);
    if (chunks > 1 && heads * static_cast<double>(rows) * static_cast<double>(s.value_dim) <
                          static_cast<double>(kMinChunkOutputs))
      break;  // narrower still only starves the output GEMM more
    const int64_t count = (s.q_len + rows - 1) / rows;
    const double us = heads * chunked_scores(s, rows) * us_per_score + us_per_chunk * static_cast<double>(count);
    if (best_us < 0 || us < best_us) best = rows, best_us = us;
  }
  return best;
}

// The largest chunk's scores, in floats, over every (batch, head): the
// workspace that chunks of `rows` rows reuse. A chunk's keys never shrink
// from one chunk to the next, so it is the last one or the last full one.
inline int64_t scores_floats(const Shape& s, int64_t rows) {
  const int64_t last0 = (s.q_len - 1) / rows * rows;  // the last chunk's first row
  int64_t most = (s.q_len - last0) * keys_ld(chunk_keys(s, s.q_len));
  if (last0 > 0) {
    const int64_t full = rows * keys_ld(chunk_keys(s, last0));
    if (full > most) most = full;
  }
  return most * s.batch * s.heads;
}

// Whether cuBLAS takes the problem: every size above 0 and within its ints
// (the scores' row of all heads within 4 TiB), heads a multiple of
// kv_heads, and the widest chunk (every query row, every key) plannable;
// a narrower chunk then is too (fewer rows or keys only relax
// gemm_layout's conditions).
inline bool plannable(const Shape& s) {
  if (s.batch <= 0 || s.heads <= 0 || s.kv_heads <= 0 || s.q_len <= 0 || s.kv_len <= 0 || s.head_dim <= 0 ||
      s.value_dim <= 0 || s.heads % s.kv_heads != 0)
    return false;
  if (!fits_int(s.q_len) || !fits_int(scores_ld(s)) || !fits_int(s.batch * s.heads)) return false;
  if (s.batch * s.heads > (int64_t{1} << 40) / scores_ld(s)) return false;
  Chunk c;
  return plan_chunk_keys(s, s.q_len, 0, s.kv_len, &c);
}

}  // namespace cublas_plan
}  // namespace attention
}  // namespace aotirt
