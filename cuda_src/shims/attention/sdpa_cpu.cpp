// Scaled dot-product attention on the CPU: plain loops, in double whatever
// the element type, one query row at a time (two passes over its scores:
// the max, then the exponentials). Correct first; CPU models that reach this
// fallback are small.

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/dtypes.h"
#include "runtime/errors.h"
#include "shims/attention/sdpa.h"
#include "shims/host_elements.h"

namespace aotirt {
namespace attention {
namespace {

using host::from_double;
using host::to_double;

template <typename T, typename Bias>
void run_typed(const Problem& p) {
  const T* q = static_cast<const T*>(p.q);
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  const Bias* bias = static_cast<const Bias*>(p.bias);
  T* out = static_cast<T*>(p.out);
  const int64_t group = p.kv_heads > 0 ? p.heads / p.kv_heads : 1;
  const double minus_inf = -std::numeric_limits<double>::infinity();
  std::vector<double> score(static_cast<size_t>(p.kv_len));
  std::vector<double> acc(static_cast<size_t>(p.value_dim));
  auto store_lse = [&](int64_t b, int64_t h, int64_t row, double value) {
    const int64_t at = b * p.lse_stride[0] + h * p.lse_stride[1] + row * p.lse_stride[2];
    if (p.lse_dtype == AOTIRT_DTYPE_FLOAT64)
      static_cast<double*>(p.lse)[at] = value;
    else
      static_cast<float*>(p.lse)[at] = static_cast<float>(value);
  };

  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.heads; ++h) {
      const int64_t hk = h / group;
      const T* kh = k + b * p.k_stride[0] + hk * p.k_stride[1];
      const T* vh = v + b * p.v_stride[0] + hk * p.v_stride[1];
      for (int64_t i = 0; i < p.q_len; ++i) {
        const T* qi = q + b * p.q_stride[0] + h * p.q_stride[1] + i * p.q_stride[2];
        T* oi = out + b * p.out_stride[0] + h * p.out_stride[1] + i * p.out_stride[2];
        int64_t keys = p.kv_len;
        if (p.causal != kNotCausal) {
          const int64_t offset = p.causal == kBottomRight ? p.kv_len - p.q_len : 0;
          keys = std::max<int64_t>(0, std::min<int64_t>(p.kv_len, i + offset + 1));
        }
        double top = minus_inf;
        for (int64_t j = 0; j < keys; ++j) {
          double s = 0.0;
          for (int64_t e = 0; e < p.head_dim; ++e)
            s += to_double(qi[e * p.q_stride[3]]) * to_double(kh[j * p.k_stride[2] + e * p.k_stride[3]]);
          s *= p.scale;
          if (bias) {
            const Bias m = bias[b * p.bias_stride[0] + h * p.bias_stride[1] + i * p.bias_stride[2] +
                                j * p.bias_stride[3]];
            if constexpr (std::is_same_v<Bias, bool>)
              s = m ? s : minus_inf;  // a boolean mask says which keys take part
            else
              s += to_double(m);
          }
          score[j] = s;
          top = std::max(top, s);
        }
        double lse = 0.0;
        if (top == minus_inf) {
          // Every key masked out (or none at all): zeros, not 0/0.
          for (int64_t d = 0; d < p.value_dim; ++d) oi[d * p.out_stride[3]] = from_double<T>(0.0);
        } else {
          double sum = 0.0;
          for (int64_t j = 0; j < keys; ++j) {
            score[j] = std::exp(score[j] - top);
            sum += score[j];
          }
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t j = 0; j < keys; ++j) {
            const T* vj = vh + j * p.v_stride[2];
            for (int64_t d = 0; d < p.value_dim; ++d) acc[d] += score[j] * to_double(vj[d * p.v_stride[3]]);
          }
          for (int64_t d = 0; d < p.value_dim; ++d) oi[d * p.out_stride[3]] = from_double<T>(acc[d] / sum);
          lse = top + std::log(sum);
        }
        if (p.lse) store_lse(b, h, i, lse);
      }
      if (p.lse)
        for (int64_t r = 0; r < p.lse_padding; ++r)
          store_lse(b, h, p.q_len + r, std::numeric_limits<double>::infinity());
    }
  }
}

}  // namespace

aotirt_status run_cpu(const Problem& p) {
  bool known = false;
  bool dispatched = host::dispatch_dtype(p.dtype, [&](auto element) {
    using T = decltype(element);
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
      known = host::dispatch_dtype(p.bias ? p.bias_dtype : p.dtype, [&](auto bias_element) {
        using Bias = decltype(bias_element);
        run_typed<T, Bias>(p);
      });
    }
  });
  if (!dispatched || !known)
    return fail(AOTIRT_ERROR_TYPE, std::string("attention on the CPU: no loop for ") + dtype_name(p.dtype) +
                                       " inputs with a " + dtype_name(p.bias_dtype) + " bias");
  return AOTIRT_OK;
}

}  // namespace attention
}  // namespace aotirt
