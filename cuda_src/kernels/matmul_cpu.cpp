#include "gelu.h"
#include "kernels.h"

namespace kernels {
namespace cpu {

// Row by row, k outer and n inner: b is read along its rows (cache friendly).
// Each c[i, j] sums its k terms in order 0..k-1, then adds the bias. (The
// CUDA kernels sum in another order; both are within float32's error bound
// of the exact product, which is what the tests hold them to.)
int matmul(const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t n, int64_t k,
           void* /*stream*/) {
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

int matmul_gelu(const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t n, int64_t k,
                void* stream) {
  matmul(a, b, bias, c, m, n, k, stream);
  for (int64_t i = 0; i < m * n; ++i) c[i] = gelu_tanh(c[i]);
  return 0;
}

int matmul_pair(const float* a, const float* b0, const float* b1, float* c0, float* c1, int64_t m, int64_t n,
                int64_t k, void* stream) {
  matmul(a, b0, nullptr, c0, m, n, k, stream);
  matmul(a, b1, nullptr, c1, m, n, k, stream);
  return 0;
}

}  // namespace cpu
}  // namespace kernels
