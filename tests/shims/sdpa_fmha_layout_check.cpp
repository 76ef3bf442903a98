// Host-only check of cuda_src/shims/attention/sdpa_fmha_layout.h (built and
// run by tests/shims/test_sdpa_fmha_layout.py; no GPU, no CUTLASS).
//
// For random attention problems over the layouts the shims and Inductor hand
// over (contiguous [B, H, L, E], [B, L, H, E] permuted, packed projections,
// broadcast batches or heads, padded rows, odd head sizes, misaligned data),
// outputs as the shims allocate them or not, each kind of log-sum-exp, and
// biases (masks) laid out as they come or broadcast:
// wherever takes() accepts a problem, the address arithmetic of CUTLASS's
// kernel (Params::advance_to_block, written out in the header's comment)
// over fields() must reach, for every element, the same place as the
// problem's own strides, and its log-sum-exp padding must be exactly the
// shim's. Fixed cases check what it must refuse.

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "host_check.h"
#include "shims/attention/sdpa_fmha_layout.h"

using aotirt::attention::Problem;
namespace layout = aotirt::attention::fmha_layout;

namespace {

using host_check::expect;

// A fake device address `elements` floats past a 256-byte-aligned base.
const void* at(int64_t elements) { return reinterpret_cast<const void*>(uintptr_t{1} << 20 | (elements * 4)); }

struct Operand {
  int64_t stride[4];
  int64_t offset;  // elements past the base
};

// [B, H, L, D] views of the ways the data comes.
Operand operand(std::mt19937& rng, int64_t B, int64_t H, int64_t L, int64_t D, int kind) {
  switch (kind) {
    case 0: return {{H * L * D, L * D, D, 1}, 0};                    // contiguous
    case 1: return {{L * H * D, D, H * D, 1}, 0};                    // [B, L, H, D] permuted
    case 2: return {{L * 3 * H * D, D, 3 * H * D, 1}, H * D * static_cast<int64_t>(rng() % 3)};  // one of packed q, k, v
    case 3: return {{0, L * D, D, 1}, 0};                            // a broadcast batch
    case 4: return {{H * L * (D + 4), L * (D + 4), D + 4, 1}, 0};    // padded rows
    case 5: return {{H * L * D, L * D, D, 1}, 1 + static_cast<int64_t>(rng() % 3)};  // misaligned start
    default: return {{L * H * D, 0, H * D, 1}, 0};                   // a broadcast head
  }
}

void check_addressing(const Problem& p) {
  const layout::Fields f = layout::fields(p);
  auto same = [&](const char* what, const void* base, const int64_t* stride, int64_t b, int64_t h, int64_t m, int64_t c,
                  int64_t kernel) {
    const int64_t mine = b * stride[0] + h * stride[1] + m * stride[2] + c * stride[3];
    expect(mine == kernel, std::string(what) + " addressed differently");
    (void)base;
  };
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h) {
      for (int64_t m = 0; m < p.q_len; ++m) {
        for (int64_t c = 0; c < p.head_dim; c += 3)
          same("query", p.q, p.q_stride, b, h, m, c, b * f.q_strideB + m * f.q_strideM + h * f.q_strideH + c);
        for (int64_t c = 0; c < p.value_dim; c += 3)
          same("output", p.out, p.out_stride, b, h, m, c,
               (b * f.num_queries + m) * int64_t{f.o_strideM} + h * f.head_dim_value + c);
      }
      for (int64_t n = 0; n < p.kv_len; ++n) {
        for (int64_t c = 0; c < p.head_dim; c += 3)
          same("key", p.k, p.k_stride, b, h, n, c, b * f.k_strideB + n * f.k_strideM + h * f.k_strideH + c);
        for (int64_t c = 0; c < p.value_dim; c += 3)
          same("value", p.v, p.v_stride, b, h, n, c, b * f.v_strideB + n * f.v_strideM + h * f.v_strideH + c);
      }
      for (int64_t m = 0; p.bias && m < p.q_len; ++m)
        for (int64_t j = 0; j < p.kv_len; j += 5)
          same("bias", p.bias, p.bias_stride, b, h, m, j,
               b * f.bias_strideB + h * f.bias_strideH + m * int64_t{f.bias_strideM} + j);
      if (p.lse) {
        // The kernel writes rows 0 .. lse_rows - 1 of each head, +inf past num_queries.
        const int64_t rows = layout::lse_rows(f.num_queries);
        for (int64_t m = 0; m < rows; ++m) {
          const int64_t kernel = (b * f.num_heads + h) * rows + m;
          const int64_t mine = b * p.lse_stride[0] + h * p.lse_stride[1] + m * p.lse_stride[2];
          expect(kernel == mine, "log-sum-exp addressed differently");
        }
        expect(rows - p.q_len == p.lse_padding, "log-sum-exp padding differs from the shim's");
      }
    }
}

Problem random_problem(std::mt19937& rng, int* out_kind, int* lse_kind) {
  static const int64_t kHeadSizes[] = {4, 16, 30, 32, 64, 80, 128, 256};
  Problem p;
  p.batch = 1 + rng() % 3;
  p.heads = 1 + rng() % 4;
  p.kv_heads = rng() % 6 == 0 ? 1 : p.heads;
  // Some lengths in whole 32s, where flash's unpadded log-sum-exp is the kernel's.
  p.q_len = rng() % 5 == 0 ? 1 : rng() % 3 == 0 ? 32 * (1 + rng() % 2) : 1 + rng() % 70;
  p.kv_len = 1 + rng() % 70;
  p.head_dim = kHeadSizes[rng() % 8];
  p.value_dim = rng() % 4 == 0 ? kHeadSizes[rng() % 8] : p.head_dim;
  p.causal = static_cast<int32_t>(rng() % 3);
  const int kinds[3] = {static_cast<int>(rng() % 7), static_cast<int>(rng() % 7), static_cast<int>(rng() % 7)};
  const Operand q = operand(rng, p.batch, p.heads, p.q_len, p.head_dim, kinds[0]);
  const Operand k = operand(rng, p.batch, p.kv_heads, p.kv_len, p.head_dim, kinds[1]);
  const Operand v = operand(rng, p.batch, p.kv_heads, p.kv_len, p.value_dim, kinds[2]);
  for (int d = 0; d < 4; ++d) p.q_stride[d] = q.stride[d], p.k_stride[d] = k.stride[d], p.v_stride[d] = v.stride[d];
  p.q = at(q.offset), p.k = at(k.offset), p.v = at(v.offset);
  // out: as the efficient shim allocates it ([B, L, H, Ev] transposed),
  // contiguous [B, H, L, Ev], or the first with padded rows.
  *out_kind = static_cast<int>(rng() % 3);
  const int64_t H = p.heads, L = p.q_len, Ev = p.value_dim;
  const int64_t out_strides[3][4] = {{L * H * Ev, Ev, H * Ev, 1}, {H * L * Ev, L * Ev, Ev, 1},
                                     {L * (H * Ev + 4), Ev, H * Ev + 4, 1}};
  for (int d = 0; d < 4; ++d) p.out_stride[d] = out_strides[*out_kind][d];
  p.out = const_cast<void*>(at(0));
  // bias: none, or [B, H, L, S] as a mask comes: contiguous, broadcast over
  // batch and heads, rows padded (torch pads them to 16), an odd row, rows
  // broadcast, or misaligned; float32, or now and then a bool mask.
  switch (rng() % 8) {
    case 0: case 1: break;
    default: {
      const int64_t S = p.kv_len, padded = (S + 15) / 16 * 16;
      const int64_t strides[6][4] = {{H * L * S, L * S, S, 1}, {0, 0, S, 1}, {0, 0, padded, 1},
                                     {0, L * (S | 1), S | 1, 1}, {0, 0, 0, 1}, {H * L * padded, L * padded, padded, 1}};
      const int which = static_cast<int>(rng() % 6);
      for (int d = 0; d < 4; ++d) p.bias_stride[d] = strides[which][d];
      p.bias = at(which == 5 && rng() % 2 ? 2 : 0);
      p.bias_dtype = rng() % 6 == 0 ? AOTIRT_DTYPE_BOOL : AOTIRT_DTYPE_FLOAT32;
    }
  }
  // lse: none, the efficient shim's (padded to 32 rows), or flash's [B, H, L].
  *lse_kind = static_cast<int>(rng() % 3);
  if (*lse_kind) {
    const int64_t rows = *lse_kind == 1 ? layout::lse_rows(L) : L;
    p.lse = const_cast<void*>(at(0));
    p.lse_stride[0] = H * rows, p.lse_stride[1] = rows, p.lse_stride[2] = 1;
    p.lse_padding = rows - L;
  }
  return p;
}

Problem plain(int64_t L, int64_t S, int64_t E) {
  Problem p;
  p.batch = 2, p.heads = p.kv_heads = 8, p.q_len = L, p.kv_len = S, p.head_dim = p.value_dim = E;
  const int64_t H = 8;
  const int64_t qs[4] = {L * H * E, E, H * E, 1}, ks[4] = {S * H * E, E, H * E, 1};
  for (int d = 0; d < 4; ++d) p.q_stride[d] = qs[d], p.k_stride[d] = p.v_stride[d] = ks[d], p.out_stride[d] = qs[d];
  p.q = p.k = p.v = at(0);
  p.out = const_cast<void*>(at(0));
  return p;
}

}  // namespace

int main() {
  std::mt19937 rng(1234);
  int accepted = 0, accepted_kinds[3] = {0, 0, 0}, accepted_outs[3] = {0, 0, 0}, accepted_biases = 0;
  for (int i = 0; i < 20000; ++i) {
    int out_kind = 0, lse_kind = 0;
    const Problem p = random_problem(rng, &out_kind, &lse_kind);
    if (!layout::takes(p)) continue;
    ++accepted, ++accepted_kinds[lse_kind], ++accepted_outs[out_kind];
    if (p.bias) {
      ++accepted_biases;
      expect(!p.lse && p.bias_dtype == AOTIRT_DTYPE_FLOAT32 && p.bias_stride[2] > 0, "a bias it must refuse");
    }
    check_addressing(p);
  }
  expect(accepted_biases > 100, "too few problems with a bias accepted: " + std::to_string(accepted_biases));
  expect(accepted > 1000, "too few problems accepted: " + std::to_string(accepted));
  for (int kind = 0; kind < 3; ++kind) expect(accepted_kinds[kind] > 100, "a kind of log-sum-exp never accepted");
  // Outputs: the shims' [B, L, H, Ev] layout, and padded rows of it; a
  // contiguous [B, H, L, Ev] one only where it is the same (one head).
  expect(accepted_outs[0] > 100 && accepted_outs[2] > 100, "an output layout never accepted");

  // What it must take, and what it must leave to cuBLAS.
  expect(layout::takes(plain(1024, 1024, 64)), "the plain problem");
  Problem p = plain(100, 100, 64);
  expect(layout::takes(p), "an unpadded problem without a log-sum-exp");
  p.kv_heads = 2;
  expect(!layout::takes(p), "grouped-query heads");
  p = plain(64, 64, 64);
  p.bias = at(0);
  p.bias_stride[2] = 64, p.bias_stride[3] = 1;  // one [L, S] mask for every batch and head
  expect(layout::takes(p), "a float32 bias");
  p.bias_dtype = AOTIRT_DTYPE_BOOL;
  expect(!layout::takes(p), "a bool mask");
  p.bias_dtype = AOTIRT_DTYPE_FLOAT32;
  p.lse = const_cast<void*>(at(0));
  p.lse_stride[0] = 8 * 64, p.lse_stride[1] = 64, p.lse_stride[2] = 1;
  expect(!layout::takes(p), "a bias beside a wanted log-sum-exp");
  p.lse = nullptr;
  p.bias_stride[2] = 0;
  expect(!layout::takes(p), "a bias broadcast over rows");
  p.bias_stride[2] = 66;
  expect(!layout::takes(p), "bias rows 8 bytes off 16");
  p.bias_stride[2] = 64, p.bias_stride[3] = 0;
  expect(!layout::takes(p), "a bias broadcast over keys");
  p.bias_stride[3] = 1, p.bias = at(1);
  expect(!layout::takes(p), "a bias 4 bytes off 16");
  expect(!layout::takes(plain(64, 64, 30)), "a head size of 30");
  p = plain(128, 64, 64);
  p.causal = aotirt::attention::kBottomRight;
  expect(!layout::takes(p), "bottom-right causal over fewer keys than rows");
  p.causal = aotirt::attention::kTopLeft;
  expect(layout::takes(p), "top-left causal over fewer keys than rows");
  p = plain(1, 64, 64);
  p.k_stride[1] = p.v_stride[1] = 0;
  expect(!layout::takes(p), "one row over broadcast key and value heads (the kernel's other path)");
  p = plain(100, 100, 64);
  p.lse = const_cast<void*>(at(0));
  p.lse_stride[0] = 8 * 100, p.lse_stride[1] = 100, p.lse_stride[2] = 1;
  expect(!layout::takes(p), "flash's unpadded log-sum-exp of 100 rows");
  p = plain(64, 64, 64);
  p.dtype = AOTIRT_DTYPE_FLOAT16;
  expect(!layout::takes(p), "float16");
  p = plain(64, 64, 64);
  p.q = at(2);
  expect(!layout::takes(p), "a query 8 bytes off 16");
  p = plain(64, 64, 64);
  p.heads = p.kv_heads = 70000;
  expect(!layout::takes(p), "more heads than the grid holds");
  p = plain(64, 64, 64);
  p.q_stride[1] = int64_t{1} << 29;  // 8 heads of it pass what the kernel's 32-bit products hold
  expect(!layout::takes(p), "head offsets past 32 bits");

  std::printf("%d problems accepted of 20000\n", accepted);
  return host_check::finish();
}
