#include "kernels.h"

namespace kernels {
namespace cpu {

int matmul(const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t n, int64_t k,
           void* /*stream*/) {
  // Row by row, k outer and n inner: b is read along its rows (cache friendly)
  // and each c[i, j] still sums its k terms in order 0..k-1, bias last, as
  // the CUDA kernel does.
  for (int64_t i = 0; i < m; ++i) {
    float* row = c + i * n;
    for (int64_t j = 0; j < n; ++j) row[j] = 0.0f;
    for (int64_t p = 0; p < k; ++p) {
      const float aip = a[i * k + p];
      const float* brow = b + p * n;
      for (int64_t j = 0; j < n; ++j) row[j] += aip * brow[j];
    }
    if (bias)
      for (int64_t j = 0; j < n; ++j) row[j] += bias[j];
  }
  return 0;
}

}  // namespace cpu
}  // namespace kernels
