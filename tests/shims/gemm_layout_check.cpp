// Host-only check of cuda_src/shims/matmul/gemm_layout.h (built and run by
// tests/shims/test_gemm_layout.py; no GPU, no cuBLAS).
//
// For every combination of sizes and strided layouts of mat1, mat2 and out,
// it carries out the plan exactly as the CUDA matmul does (contiguous copies,
// scratch, then one column-major GEMM with the plan's op/ld/batch strides,
// emulating cuBLAS including its argument checks) and compares with a direct
// strided product. Elements of out's buffer outside the view must stay put.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "shims/matmul/gemm_layout.h"

namespace gl = aotirt::gemm_layout;

namespace {

struct Layout {
  const char* name;
  bool input_only;  // repeats elements: fine to read, wrong to write
};

const Layout kLayouts[] = {
    {"row", false},   {"col", false},      {"row_padded", false}, {"col_padded", false}, {"strided", false},
    {"rev_rows", false}, {"rev_cols", false}, {"zero_rows", true}, {"zero_cols", true},
};
const char* kBatchLayouts[] = {"outer", "inner", "zero", "reversed"};

// A [B, R, C] view in a buffer of doubles: strides and the offset of [0,0,0].
struct View {
  int64_t size[3];
  int64_t stride[3];
  int64_t offset;
  std::vector<double>* buffer;
  double& at(int64_t b, int64_t r, int64_t c) const {
    return (*buffer)[offset + b * stride[0] + r * stride[1] + c * stride[2]];
  }
};

// Strides for `layout` / `batch_layout`, and the buffer size it needs.
View make_view(int64_t b, int64_t r, int64_t c, const std::string& layout, const std::string& batch_layout,
               std::vector<double>* buffer, std::mt19937* rng, double fill) {
  int64_t sr = c, sc = 1, pad = 0;
  if (layout == "col") sr = 1, sc = r;
  if (layout == "row_padded") sr = c + 2, pad = 3;
  if (layout == "col_padded") sr = 1, sc = r + 3, pad = 1;
  if (layout == "strided") sr = 2 * c, sc = 2, pad = 1;
  if (layout == "rev_rows") sr = -c;
  if (layout == "rev_cols") sr = c, sc = -1;
  if (layout == "zero_rows") sr = 0;
  if (layout == "zero_cols") sc = 0;
  auto span = [](int64_t n, int64_t s) { return n > 0 ? (n - 1) * s : 0; };
  const int64_t extent = std::max<int64_t>(0, span(r, sr)) - std::min<int64_t>(0, span(r, sr)) +
                         std::max<int64_t>(0, span(c, sc)) - std::min<int64_t>(0, span(c, sc)) + 1;
  View v{{b, r, c}, {extent + pad, sr, sc}, 0, buffer};
  if (batch_layout == "inner") {
    // Matrices interleaved: batch i's element (j, l) sits beside batch i+1's.
    v.stride[0] = 1;
    v.stride[1] = sr * b;
    v.stride[2] = sc * b;
  } else if (batch_layout == "zero") {
    v.stride[0] = 0;
  } else if (batch_layout == "reversed") {
    v.stride[0] = -(extent + pad);
  }
  // Room for every negative step before the first element, padding around.
  int64_t low = 0, high = 0;
  for (int d = 0; d < 3; ++d) {
    int64_t step = span(v.size[d], v.stride[d]);
    (step < 0 ? low : high) += step;
  }
  v.offset = -low + pad;
  buffer->assign(static_cast<size_t>(v.offset + high + 1 + pad), fill);
  std::normal_distribution<double> normal;
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < r; ++j)
      for (int64_t l = 0; l < c; ++l) v.at(i, j, l) = normal(*rng);
  return v;
}

// A contiguous copy of `v` (the strides gemm_layout::contiguous assumes).
View contiguous_copy(const View& v, std::vector<double>* buffer) {
  View c{{v.size[0], v.size[1], v.size[2]}, {0, 0, 0}, 0, buffer};
  gl::contiguous(v.size[1], v.size[2], c.stride);
  buffer->assign(static_cast<size_t>(std::max<int64_t>(v.size[0], 1) * c.stride[0]), 0.0);
  for (int64_t i = 0; i < v.size[0]; ++i)
    for (int64_t j = 0; j < v.size[1]; ++j)
      for (int64_t l = 0; l < v.size[2]; ++l) c.at(i, j, l) = v.at(i, j, l);
  return c;
}

// cublasGemmStridedBatchedEx's contract, alpha 1 and beta 0; "" or why it
// would refuse the arguments.
// Each matrix is a buffer and the offset of its first element; an index
// outside the buffer is reported, not followed.
std::string column_major_gemm(int64_t batch, int64_t m, int64_t n, int64_t k, const gl::Operand& x,
                              const std::vector<double>& xb, int64_t xo, const gl::Operand& y,
                              const std::vector<double>& yb, int64_t yo, const gl::Operand& c,
                              std::vector<double>* cb, int64_t co) {
  auto inside = [](const std::vector<double>& buf, int64_t i) { return i >= 0 && i < (int64_t)buf.size(); };
  if (m < 0 || n < 0 || k < 0) return "negative size";
  if (x.ld < std::max<int64_t>(1, x.op == gl::kOpN ? m : k)) return "lda too small";
  if (y.ld < std::max<int64_t>(1, y.op == gl::kOpN ? k : n)) return "ldb too small";
  if (c.ld < std::max<int64_t>(1, m)) return "ldc too small";
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0.0;
        for (int64_t l = 0; l < k; ++l) {
          int64_t xi = xo + b * x.batch_stride + (x.op == gl::kOpN ? i + l * x.ld : l + i * x.ld);
          int64_t yi = yo + b * y.batch_stride + (y.op == gl::kOpN ? l + j * y.ld : j + l * y.ld);
          if (!inside(xb, xi) || !inside(yb, yi)) return "read out of bounds";
          sum += xb[xi] * yb[yi];
        }
        int64_t ci = co + b * c.batch_stride + i + j * c.ld;
        if (!inside(*cb, ci)) return "write out of bounds";
        (*cb)[ci] = sum;
      }
  return "";
}

}  // namespace

int main() {
  std::mt19937 rng(1234);
  const int64_t sizes[] = {1, 2, 3};
  long cases = 0, failures = 0;
  for (int64_t batch : {int64_t{1}, int64_t{3}})
    for (int64_t m : sizes)
      for (int64_t n : sizes)
        for (int64_t k : sizes)
          for (const Layout& la : kLayouts)
            for (const Layout& lb : kLayouts)
              for (const Layout& lo : kLayouts) {
                if (lo.input_only) continue;
                for (const char* ba : kBatchLayouts)
                  for (const char* bo : kBatchLayouts) {
                    if (batch == 1 && (std::string(ba) != "outer" || std::string(bo) != "outer")) continue;
                    if (std::string(bo) == "zero") continue;  // out may not repeat elements
                    const char* bb = ba;                       // mat2 follows mat1's batch layout
                    for (bool overlaps : {false, true}) {
                      ++cases;
                      std::vector<double> abuf, bbuf, obuf, acopy, bcopy, scratch;
                      View a = make_view(batch, m, k, la.name, ba, &abuf, &rng, 0.0);
                      View b = make_view(batch, k, n, lb.name, bb, &bbuf, &rng, 0.0);
                      View o = make_view(batch, m, n, lo.name, bo, &obuf, &rng, -777.0);
                      for (int64_t i = 0; i < batch; ++i)  // every element of out's view starts as NaN
                        for (int64_t r = 0; r < m; ++r)
                          for (int64_t c = 0; c < n; ++c) o.at(i, r, c) = std::nan("");
                      std::vector<double> before = obuf;

                      gl::Plan plan = gl::plan(batch, m, n, k, a.stride, b.stride, o.stride, overlaps);
                      View av = plan.copy_a ? contiguous_copy(a, &acopy) : a;
                      View bv = plan.copy_b ? contiguous_copy(b, &bcopy) : b;
                      View target = o;
                      if (plan.scratch) {
                        target = contiguous_copy(o, &scratch);
                      }
                      const View& xv = plan.transposed ? bv : av;
                      const View& yv = plan.transposed ? av : bv;
                      std::string refused =
                          column_major_gemm(batch, plan.m, plan.n, plan.k, plan.x, *xv.buffer, xv.offset, plan.y,
                                            *yv.buffer, yv.offset, plan.c, target.buffer, target.offset);
                      if (plan.scratch)
                        for (int64_t i = 0; i < batch; ++i)
                          for (int64_t r = 0; r < m; ++r)
                            for (int64_t c = 0; c < n; ++c) o.at(i, r, c) = target.at(i, r, c);

                      std::string why = refused;
                      if (why.empty() && (overlaps && !plan.scratch)) why = "overlap not sent to scratch";
                      for (int64_t i = 0; i < batch && why.empty(); ++i)
                        for (int64_t r = 0; r < m && why.empty(); ++r)
                          for (int64_t c = 0; c < n && why.empty(); ++c) {
                            double ref = 0.0;
                            for (int64_t l = 0; l < k; ++l) ref += a.at(i, r, l) * b.at(i, l, c);
                            double got = o.at(i, r, c);
                            double err = got - ref;
                            if (!(err <= 1e-12 && err >= -1e-12)) why = "wrong value";
                            before[&o.at(i, r, c) - obuf.data()] = got;  // the only elements allowed to change
                          }
                      if (why.empty() && before != obuf) why = "wrote outside out's view";
                      if (!why.empty()) {
                        if (++failures <= 20)
                          std::printf("FAIL %s: batch %lld m %lld n %lld k %lld, a %s/%s b %s/%s out %s/%s%s "
                                      "(plan: transposed %d scratch %d copy_a %d copy_b %d)\n",
                                      why.c_str(), (long long)batch, (long long)m, (long long)n, (long long)k,
                                      la.name, ba, lb.name, bb, lo.name, bo, overlaps ? " overlapping" : "",
                                      plan.transposed, plan.scratch, plan.copy_a, plan.copy_b);
                      }
                    }
                  }
              }
  std::printf("%ld cases, %ld failures\n", cases, failures);
  return failures == 0 ? 0 : 1;
}
