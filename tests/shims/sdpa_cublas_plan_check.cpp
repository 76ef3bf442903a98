// Host-only check of cuda_src/shims/attention/sdpa_cublas_plan.h (built and
// run by tests/shims/test_sdpa_cublas_plan.py; no GPU, no cuBLAS).
//
// For random attention problems over the layouts Inductor and the shims
// hand over (contiguous, [B, L, H, D] permuted, packed projections, sequence
// first, column-major matrices, padded rows, broadcast batches), grouped-
// query heads, lengths of one and more, and chunks of query rows (under a
// causal mask each over the keys its last row sees), it carries out the
// plan as sdpa_cublas.cu does: the chunks schedule_rows picks, each planned
// by plan_chunk, in a workspace of scores_floats floats; per chunk, the
// scores GEMM, an exact softmax over the chunk's keys of the workspace rows,
// the output GEMM, each GEMM emulated as
// cuBLAS's column-major one (its argument checks included), strided or
// through the pointer arrays. Every read and write is bounds-checked against
// its buffer; the output is compared with attention computed directly from
// the strides, and output memory outside the view must stay untouched.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "shims/attention/sdpa_cublas_plan.h"

namespace plan = aotirt::attention::cublas_plan;

namespace {

int failures = 0;

void failed(const std::string& what, const std::string& why) {
  if (++failures <= 20) std::printf("FAIL %s: %s\n", what.c_str(), why.c_str());
}

// A float buffer whose every access is checked.
struct Buffer {
  std::vector<float> data;
  bool bad = false;
  float& at(int64_t i) {
    static float sink;
    if (i < 0 || i >= static_cast<int64_t>(data.size())) {
      bad = true;
      return sink;
    }
    return data[i];
  }
};

// Layouts of a [B, H, L, D] operand: element strides and the buffer size.
const char* const kLayouts[] = {"contiguous", "blhe", "packed", "lbhe", "column", "padded", "batch0", "e_stride2"};

bool layout_strides(const std::string& name, int64_t B, int64_t H, int64_t L, int64_t D, int64_t st[4],
                    int64_t* size) {
  if (name == "contiguous") {
    st[0] = H * L * D, st[1] = L * D, st[2] = D, st[3] = 1, *size = B * H * L * D;
  } else if (name == "blhe") {  // [B, L, H, D] permuted
    st[0] = L * H * D, st[1] = D, st[2] = H * D, st[3] = 1, *size = B * L * H * D;
  } else if (name == "packed") {  // one of q, k, v of a [B, L, 3, H, D] projection
    st[0] = L * 3 * H * D, st[1] = D, st[2] = 3 * H * D, st[3] = 1, *size = B * L * 3 * H * D;
  } else if (name == "lbhe") {  // sequence first
    st[0] = H * D, st[1] = D, st[2] = B * H * D, st[3] = 1, *size = L * B * H * D;
  } else if (name == "column") {  // [B, H, D, L]: each matrix column-major
    st[0] = H * D * L, st[1] = D * L, st[2] = 1, st[3] = L, *size = B * H * D * L;
  } else if (name == "padded") {  // rows D + 3 apart
    st[0] = H * L * (D + 3), st[1] = L * (D + 3), st[2] = D + 3, st[3] = 1, *size = B * H * L * (D + 3);
  } else if (name == "batch0") {  // one batch broadcast
    st[0] = 0, st[1] = L * D, st[2] = D, st[3] = 1, *size = H * L * D;
  } else if (name == "e_stride2") {  // no unit stride: cuBLAS cannot take it
    st[0] = H * L * D * 2, st[1] = L * D * 2, st[2] = D * 2, st[3] = 2, *size = B * H * L * D * 2;
  } else {
    return false;
  }
  return true;
}

// C (m x n, ldc) = alpha op(A) op(B), column-major, as cuBLAS: refuses what
// cuBLAS refuses (CUBLAS_STATUS_INVALID_VALUE).
bool gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, Buffer& A, int64_t a0, int64_t lda,
          Buffer& B, int64_t b0, int64_t ldb, Buffer& C, int64_t c0, int64_t ldc) {
  if (m < 0 || n < 0 || k < 0 || lda < std::max<int64_t>(1, ta ? k : m) || ldb < std::max<int64_t>(1, tb ? n : k) ||
      ldc < std::max<int64_t>(1, m))
    return false;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t l = 0; l < k; ++l) {
        const double a = ta ? A.at(a0 + l + i * lda) : A.at(a0 + i + l * lda);
        const double b = tb ? B.at(b0 + j + l * ldb) : B.at(b0 + l + j * ldb);
        acc += a * b;
      }
      C.at(c0 + i + j * ldc) = static_cast<float>(alpha * acc);
    }
  return true;
}

// One batched GEMM of the chunk, strided or through the pointer arrays (the
// fill kernel's Batch::at).
bool batched(const plan::Chunk& c, const aotirt::gemm_layout::Plan& g, int x, int y, int out, double alpha,
             Buffer* operands[plan::kOperands]) {
  for (int64_t n = 0; n < c.count; ++n) {
    int64_t at[plan::kOperands];
    for (int o = 0; o < plan::kOperands; ++o)
      at[o] = c.strided ? c.batch.offset[o] + n * c.batch_stride[o] : c.batch.at(o, n);
    if (!gemm(g.x.op, g.y.op, g.m, g.n, g.k, alpha, *operands[x], at[x], g.x.ld, *operands[y], at[y], g.y.ld,
              *operands[out], at[out], g.c.ld))
      return false;
  }
  return true;
}

struct Case {
  int64_t B, H, Hk, L, S, E, Ev;
  std::string q_layout, k_layout, v_layout, out_layout;
  int causal;          // 0 none, 1 top left, 2 bottom right
  int64_t bound_rows;  // query rows per chunk the bound allows
  int64_t forced = 0;  // chunks asked for (AOTIRT_ATTENTION_CAUSAL_CHUNKS); 0: the model's
};

std::string name_of(const Case& c) {
  char text[256];
  std::snprintf(text, sizeof(text),
                "B%ld H%ld Hk%ld L%ld S%ld E%ld Ev%ld q=%s k=%s v=%s out=%s causal=%d rows=%ld forced=%ld",
                static_cast<long>(c.B), static_cast<long>(c.H), static_cast<long>(c.Hk), static_cast<long>(c.L),
                static_cast<long>(c.S), static_cast<long>(c.E), static_cast<long>(c.Ev), c.q_layout.c_str(),
                c.k_layout.c_str(), c.v_layout.c_str(), c.out_layout.c_str(), c.causal,
                static_cast<long>(c.bound_rows), static_cast<long>(c.forced));
  return text;
}

int64_t visible_keys(const Case& c, int64_t i) {
  if (!c.causal) return c.S;
  const int64_t last = i + (c.causal == 2 ? c.S - c.L : 0);
  return last < 0 ? 0 : std::min(last + 1, c.S);
}

int strided_runs = 0, pointer_runs = 0, folded_runs = 0, refused = 0, trimmed_runs = 0;

void check(const Case& cs, std::mt19937* rng) {
  const std::string what = name_of(cs);
  plan::Shape s;
  s.batch = cs.B, s.heads = cs.H, s.kv_heads = cs.Hk, s.q_len = cs.L, s.kv_len = cs.S;
  s.head_dim = cs.E, s.value_dim = cs.Ev;
  s.causal = cs.causal;
  int64_t sizes[plan::kOperands] = {};
  layout_strides(cs.q_layout, cs.B, cs.H, cs.L, cs.E, s.q_stride, &sizes[plan::kQ]);
  layout_strides(cs.k_layout, cs.B, cs.Hk, cs.S, cs.E, s.k_stride, &sizes[plan::kK]);
  layout_strides(cs.v_layout, cs.B, cs.Hk, cs.S, cs.Ev, s.v_stride, &sizes[plan::kV]);
  layout_strides(cs.out_layout, cs.B, cs.H, cs.L, cs.Ev, s.out_stride, &sizes[plan::kOut]);

  // Only the query's no-unit-stride layout is beyond cuBLAS (where its
  // matrix has more than one row and column).
  const bool expected = !(cs.q_layout == "e_stride2" && cs.E > 1 && cs.L > 1);
  if (plan::plannable(s) != expected) {
    failed(what, expected ? "refused a layout cuBLAS takes" : "took a layout without a unit stride");
    return;
  }
  if (!expected) {
    ++refused;
    return;
  }

  std::normal_distribution<float> normal;
  Buffer q, k, v, out, scores;
  for (Buffer* b : {&q, &k, &v}) {
    const int which = b == &q ? plan::kQ : b == &k ? plan::kK : plan::kV;
    b->data.resize(sizes[which]);
    for (float& x : b->data) x = normal(*rng);
  }
  out.data.assign(sizes[plan::kOut] + 7, NAN);  // NaN: not written
  const int64_t rows_per_chunk = plan::schedule_rows(s, cs.bound_rows, cs.forced);
  if (rows_per_chunk < 1 || rows_per_chunk > std::max<int64_t>(1, std::min(cs.L, cs.bound_rows)))
    return failed(what, "schedule_rows passed the bound");
  scores.data.assign(plan::scores_floats(s, rows_per_chunk), NAN);
  Buffer* operands[plan::kOperands] = {&q, &k, &v, &scores, &out};
  const double scale = 0.37;

  for (int64_t row0 = 0; row0 < cs.L; row0 += rows_per_chunk) {
    const int64_t rows = std::min(rows_per_chunk, cs.L - row0);
    plan::Chunk c;
    if (!plan::plan_chunk(s, rows, row0, &c)) return failed(what, "a chunk could not be planned");
    (c.strided ? strided_runs : pointer_runs)++;
    folded_runs += c.folded;
    trimmed_runs += c.keys < cs.S;
    if (c.rows != rows || c.keys < 1 || c.keys > cs.S || c.keys < visible_keys(cs, row0 + rows - 1))
      return failed(what, "a chunk's keys miss some its rows see");
    const int64_t ld = c.ld;
    if (ld < c.keys || ld % 4) return failed(what, "unaligned score rows");
    if (c.count > cs.B * cs.H) return failed(what, "more matrices than the pointer arrays hold");
    if (!batched(c, c.qk, c.qk_x, c.qk_y, plan::kS, scale, operands))
      return failed(what, "cuBLAS would refuse the scores GEMM");
    // The softmax kernel's rows: r = (b * H + h) * rows + (i - row0), ld
    // apart, each over the chunk's keys (past the row's own: zeros).
    for (int64_t r = 0; r < cs.B * cs.H * rows; ++r) {
      const int64_t i = row0 + r % rows, keys = visible_keys(cs, i);
      double top = -INFINITY, sum = 0;
      for (int64_t j = 0; j < keys; ++j) top = std::max<double>(top, scores.at(r * ld + j));
      std::vector<double> e(c.keys, 0.0);
      for (int64_t j = 0; j < keys; ++j) sum += e[j] = std::exp(scores.at(r * ld + j) - top);
      for (int64_t j = 0; j < c.keys; ++j) scores.at(r * ld + j) = sum > 0 ? static_cast<float>(e[j] / sum) : 0.0f;
    }
    if (!batched(c, c.pv, c.pv_x, c.pv_y, plan::kOut, 1.0, operands))
      return failed(what, "cuBLAS would refuse the output GEMM");
  }
  for (Buffer* b : operands)
    if (b->bad) return failed(what, "an access outside its buffer");

  // Directly from the strides.
  const int64_t group = cs.H / cs.Hk;
  std::vector<bool> inside(out.data.size(), false);
  double error = 0, norm = 0;
  for (int64_t b = 0; b < cs.B; ++b)
    for (int64_t h = 0; h < cs.H; ++h)
      for (int64_t i = 0; i < cs.L; ++i) {
        const int64_t hk = h / group, keys = visible_keys(cs, i);
        std::vector<double> p(cs.S, 0.0);
        double top = -INFINITY, sum = 0;
        for (int64_t j = 0; j < keys; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < cs.E; ++e)
            dot += static_cast<double>(q.data[b * s.q_stride[0] + h * s.q_stride[1] + i * s.q_stride[2] +
                                              e * s.q_stride[3]]) *
                   k.data[b * s.k_stride[0] + hk * s.k_stride[1] + j * s.k_stride[2] + e * s.k_stride[3]];
          p[j] = dot * scale;
          top = std::max(top, p[j]);
        }
        for (int64_t j = 0; j < keys; ++j) sum += p[j] = std::exp(p[j] - top);
        for (int64_t d = 0; d < cs.Ev; ++d) {
          double want = 0;
          for (int64_t j = 0; j < keys; ++j)
            want += p[j] * v.data[b * s.v_stride[0] + hk * s.v_stride[1] + j * s.v_stride[2] + d * s.v_stride[3]];
          want = sum > 0 ? want / sum : 0;
          const int64_t at = b * s.out_stride[0] + h * s.out_stride[1] + i * s.out_stride[2] + d * s.out_stride[3];
          inside[at] = true;
          const double got = out.data[at];
          if (std::isnan(got)) return failed(what, "an output element was not written");
          error += (got - want) * (got - want);
          norm += want * want;
        }
      }
  for (size_t i = 0; i < out.data.size(); ++i)
    if (!inside[i] && !std::isnan(out.data[i])) return failed(what, "memory outside the output view was written");
  const double relative = std::sqrt(error / (norm > 0 ? norm : 1));
  if (!(relative < 1e-5)) failed(what, "relative error " + std::to_string(relative));
}

}  // namespace

int main() {
  std::mt19937 rng(14);
  int cases = 0;
  // Fixed cases: the shapes of the layouts, every mode.
  const Case fixed[] = {
      {1, 8, 8, 16, 16, 8, 8, "contiguous", "contiguous", "contiguous", "blhe", 0, 1 << 30},
      {1, 8, 8, 16, 16, 8, 8, "blhe", "blhe", "blhe", "blhe", 1, 1 << 30},
      {2, 8, 8, 9, 13, 8, 6, "blhe", "blhe", "blhe", "blhe", 2, 1 << 30},
      {2, 8, 2, 9, 13, 8, 6, "contiguous", "contiguous", "contiguous", "contiguous", 1, 1 << 30},
      {3, 8, 1, 1, 13, 8, 8, "blhe", "blhe", "blhe", "blhe", 0, 1 << 30},
      {2, 8, 2, 9, 13, 8, 6, "column", "column", "column", "column", 2, 1 << 30},
      {2, 4, 2, 20, 7, 5, 3, "contiguous", "contiguous", "contiguous", "contiguous", 2, 3},
      {2, 4, 1, 20, 7, 5, 3, "contiguous", "contiguous", "contiguous", "contiguous", 0, 1},
      // Causal chunks the schedule asks for (rows a multiple of 64), the
      // last one partial; bottom right with more queries than keys (early
      // chunks see no key), and with fewer.
      {1, 2, 1, 130, 130, 3, 2, "contiguous", "contiguous", "contiguous", "contiguous", 1, 1 << 30, 3},
      {1, 2, 2, 150, 100, 3, 2, "blhe", "blhe", "blhe", "blhe", 2, 1 << 30, 3},
      {1, 2, 2, 100, 170, 3, 2, "contiguous", "column", "lbhe", "padded", 2, 1 << 30, 2},
      {2, 4, 2, 129, 129, 2, 3, "packed", "packed", "packed", "column", 1, 50, 0},
  };
  for (const Case& c : fixed) check(c, &rng), ++cases;
  // Random ones.
  const int64_t heads[] = {1, 2, 4, 8}, lengths[] = {1, 2, 5, 17}, keys[] = {1, 3, 16, 21}, dims[] = {1, 3, 8};
  const int64_t bounds[] = {1, 2, 3, 7, 1 << 30};
  const char* const outs[] = {"contiguous", "blhe", "column", "padded"};
  auto pick = [&](const auto& options) { return options[rng() % (sizeof(options) / sizeof(options[0]))]; };
  for (int n = 0; n < 3000; ++n) {
    Case c;
    c.B = 1 + rng() % 3;
    c.H = pick(heads);
    const int64_t divisors[] = {c.H, std::max<int64_t>(1, c.H / 2), 1};
    c.Hk = pick(divisors);
    c.L = pick(lengths), c.S = pick(keys), c.E = pick(dims), c.Ev = pick(dims);
    c.q_layout = pick(kLayouts), c.k_layout = pick(kLayouts), c.v_layout = pick(kLayouts);
    if (c.k_layout == "e_stride2") c.k_layout = "lbhe";  // only the query's is checked for refusal
    if (c.v_layout == "e_stride2") c.v_layout = "batch0";
    if (c.q_layout == "batch0") c.q_layout = "packed";  // the query is never broadcast
    c.out_layout = pick(outs);
    c.causal = static_cast<int>(rng() % 3);
    c.bound_rows = pick(bounds);
    check(c, &rng);
    ++cases;
  }
  // chunk_rows: the bound in bytes over every head's row of scores.
  plan::Shape s;
  s.batch = 2, s.heads = 8, s.q_len = 1000, s.kv_len = 700;  // rows of 2 * 8 * 700 * 4 = 44800 bytes
  if (plan::chunk_rows(s, 1 << 20) != 23 || plan::chunk_rows(s, 1000) != 1 || plan::chunk_rows(s, 1 << 30) != 1000)
    failed("chunk_rows", "wrong number of rows");
  // schedule_rows: one chunk without a causal mask (or as the bound
  // allows); under one, several for long sequences, one for short ones.
  struct Schedule {
    int64_t B, H, L, S, E, causal, bound_rows, forced, rows;
  };
  const Schedule schedules[] = {
      {2, 8, 4096, 4096, 64, 0, 1024, 0, 1024},   // the bound's chunks
      {2, 8, 4096, 4096, 64, 1, 1024, 0, 512},    // 8 chunks
      {2, 8, 4096, 4096, 128, 1, 1024, 0, 512},   // 8 chunks
      {2, 8, 4096, 4096, 64, 1, 100, 0, 100},     // the bound chunks finer
      {2, 8, 4096, 4096, 64, 1, 4096, 3, 1408},   // asked for
      {2, 8, 1024, 1024, 64, 1, 1024, 0, 512},
      {2, 8, 1024, 1024, 128, 1, 1024, 0, 256},
      {2, 8, 512, 512, 64, 1, 512, 0, 512},
      {2, 8, 128, 128, 64, 1, 128, 0, 128},
      {2, 8, 128, 128, 128, 1, 128, 0, 128},
      {1, 8, 1, 4096, 64, 2, 1, 0, 1},             // a decoding step
  };
  for (const Schedule& c : schedules) {
    plan::Shape t;
    t.batch = c.B, t.heads = t.kv_heads = c.H, t.q_len = c.L, t.kv_len = c.S, t.head_dim = t.value_dim = c.E;
    t.causal = static_cast<int32_t>(c.causal);
    const int64_t rows = plan::schedule_rows(t, c.bound_rows, c.forced);
    if (rows != c.rows)
      failed("schedule_rows", "L" + std::to_string(c.L) + " E" + std::to_string(c.E) + " causal " +
                                  std::to_string(c.causal) + ": " + std::to_string(rows) + " rows, not " +
                                  std::to_string(c.rows));
  }
  if (strided_runs == 0 || pointer_runs == 0 || folded_runs == 0 || refused == 0 || trimmed_runs == 0)
    failed("coverage", "a mode never ran: strided " + std::to_string(strided_runs) + ", pointer arrays " +
                           std::to_string(pointer_runs) + ", folded " + std::to_string(folded_runs) +
                           ", refused " + std::to_string(refused) + ", trimmed " + std::to_string(trimmed_runs));
  std::printf("%d cases (chunks: %d strided, %d pointer arrays, %d folded, %d over fewer keys; %d refused), %d "
              "failures\n",
              cases, strided_runs, pointer_runs, folded_runs, trimmed_runs, refused, failures);
  return failures ? 1 : 0;
}
