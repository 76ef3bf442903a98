// How a row-major GEMM on strided views maps onto cuBLAS's column-major one:
// pure index arithmetic, kept apart from the CUDA calls so that a host-only
// test (tests/shims/gemm_layout_check.cpp) can run every case against a reference
// without a GPU.
//
// cuBLAS computes C = op(X) op(Y) on column-major matrices, op being N (as
// stored) or T (transposed), each with one leading dimension (ld). A
// row-major matrix read column-major is its transpose, so:
// - out row-major (or any layout whose transpose is column-major): C = out^T
//   = mat2^T mat1^T, X = mat2^T, Y = mat1^T;
// - out column-major: C = out = mat1 mat2, X = mat1, Y = mat2.
// Each factor then goes in as N when its view is column-major, as T when it
// is row-major (a transposed weight costs nothing), and is copied contiguous
// first when it is neither (no single ld describes it). An out that is
// neither, or that overlaps an input, is computed into a contiguous scratch.
#pragma once

#include <algorithm>
#include <cstdint>

namespace aotirt {
namespace gemm_layout {

constexpr int kOpN = 0;  // CUBLAS_OP_N
constexpr int kOpT = 1;  // CUBLAS_OP_T

// A rows x cols matrix (one of a batch) with element strides.
struct View {
  int64_t rows = 0, cols = 0;
  int64_t row_stride = 0, col_stride = 0, batch_stride = 0;
};

// One matrix as cuBLAS takes it.
struct Operand {
  int op = kOpN;
  int64_t ld = 1;
  int64_t batch_stride = 0;
};

// The [R, C] matrices of a [B, R, C] view with strides `s`, or their transposes.
inline View view_of(int64_t r, int64_t c, const int64_t s[3], bool transposed) {
  View v;
  v.rows = transposed ? c : r;
  v.cols = transposed ? r : c;
  v.row_stride = transposed ? s[2] : s[1];
  v.col_stride = transposed ? s[1] : s[2];
  v.batch_stride = s[0];
  return v;
}

// Column-major as stored: rows adjacent, columns `ld` apart (op N). A
// dimension of size 1 has no stride to respect.
inline bool column_major(const View& v, Operand* out) {
  const int64_t min_ld = std::max<int64_t>(v.rows, 1);
  if ((v.rows > 1 && v.row_stride != 1) || (v.cols > 1 && v.col_stride < min_ld)) return false;
  *out = Operand{kOpN, v.cols > 1 ? v.col_stride : min_ld, v.batch_stride};
  return true;
}

// Row-major as stored: the transpose of a column-major cols x rows (op T).
inline bool row_major(const View& v, Operand* out) {
  const int64_t min_ld = std::max<int64_t>(v.cols, 1);
  if ((v.cols > 1 && v.col_stride != 1) || (v.rows > 1 && v.row_stride < min_ld)) return false;
  *out = Operand{kOpT, v.rows > 1 ? v.row_stride : min_ld, v.batch_stride};
  return true;
}

// A factor as cuBLAS can read it in place; false when it needs a copy.
// cuBLAS's batch strides are signed, but a negative one is not worth trusting.
inline bool factor(const View& v, int64_t batch, Operand* out) {
  if (batch > 1 && v.batch_stride < 0) return false;
  return column_major(v, out) || row_major(v, out);
}

struct Plan {
  bool transposed = true;  // C is out^T (else out)
  bool scratch = false;    // compute into a contiguous [B, M, N], then copy into out
  bool copy_a = false;     // mat1 must first be copied contiguous
  bool copy_b = false;     // mat2 likewise
  int64_t m = 0, n = 0, k = 0;  // cuBLAS's m, n, k
  Operand x, y, c;              // cuBLAS's A, B, C
};

inline void contiguous(int64_t r, int64_t c, int64_t s[3]) {
  s[2] = 1;
  s[1] = std::max<int64_t>(c, 1);
  s[0] = std::max<int64_t>(r, 1) * s[1];
}

// The cuBLAS call for out[B,M,N] = a[B,M,K] @ b[B,K,N], given the views'
// strides. When copy_a/copy_b/scratch are set, x/y/c describe the
// contiguous copy (strides from contiguous()), not the original.
inline Plan plan(int64_t batch, int64_t m, int64_t n, int64_t k, const int64_t a_strides[3],
                 const int64_t b_strides[3], const int64_t out_strides[3], bool out_overlaps_input) {
  Plan p;
  const bool forward = batch <= 1 || out_strides[0] >= 0;
  bool placed = false;
  if (!out_overlaps_input && forward) {
    placed = column_major(view_of(m, n, out_strides, true), &p.c);  // row-major out
    if (placed) {
      p.transposed = true;
    } else if (column_major(view_of(m, n, out_strides, false), &p.c)) {
      p.transposed = false;
      placed = true;
    }
  }
  if (!placed) {
    int64_t s[3];
    contiguous(m, n, s);
    p.scratch = true;
    p.transposed = true;
    column_major(view_of(m, n, s, true), &p.c);  // always true for a contiguous matrix
  }
  p.m = p.transposed ? n : m;
  p.n = p.transposed ? m : n;
  p.k = k;
  // X = b^T, Y = a^T when transposed; else X = a, Y = b.
  int64_t a_s[3] = {a_strides[0], a_strides[1], a_strides[2]};
  int64_t b_s[3] = {b_strides[0], b_strides[1], b_strides[2]};
  auto place = [&](int64_t r, int64_t c, int64_t* s, bool* copy, Operand* out) {
    if (factor(view_of(r, c, s, p.transposed), batch, out)) return;
    *copy = true;
    contiguous(r, c, s);
    factor(view_of(r, c, s, p.transposed), batch, out);  // true: contiguous is row-major
  };
  if (p.transposed) {
    place(k, n, b_s, &p.copy_b, &p.x);
    place(m, k, a_s, &p.copy_a, &p.y);
  } else {
    place(m, k, a_s, &p.copy_a, &p.x);
    place(k, n, b_s, &p.copy_b, &p.y);
  }
  return p;
}

}  // namespace gemm_layout
}  // namespace aotirt
