#include <cmath>
#include <vector>

#include "kernels.h"

namespace kernels {
namespace cpu {

int attention(const float* q, const float* k, const float* v, const float* residual, float* out, int64_t t,
              int64_t dim, void* /*stream*/) {
  for (int64_t d = 0; d < dim; ++d) out[d] = residual ? residual[d] : 0.0f;
  if (t == 0) return 0;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
  std::vector<float> p(static_cast<size_t>(t));
  float top = -INFINITY;
  for (int64_t i = 0; i < t; ++i) {
    float s = 0.0f;
    for (int64_t d = 0; d < dim; ++d) s += q[d] * k[i * dim + d];
    p[i] = s * scale;
    top = std::fmax(top, p[i]);
  }
  // Subtracting the largest score keeps exp() from overflowing.
  float sum = 0.0f;
  for (int64_t i = 0; i < t; ++i) {
    p[i] = std::exp(p[i] - top);
    sum += p[i];
  }
  const float inv = 1.0f / sum;
  for (int64_t d = 0; d < dim; ++d) {
    float acc = 0.0f;
    for (int64_t i = 0; i < t; ++i) acc += p[i] * v[i * dim + d];
    const float context = acc * inv;
    out[d] = residual ? residual[d] + context : context;
  }
  return 0;
}

}  // namespace cpu
}  // namespace kernels
