#include "gelu.h"
#include "kernels.h"

namespace kernels {
namespace cpu {

int gelu(const float* x, float* y, int64_t n, void* /*stream*/) {
  for (int64_t i = 0; i < n; ++i) y[i] = gelu_tanh(x[i]);
  return 0;
}

int add(const float* a, const float* b, float* out, int64_t n, void* /*stream*/) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
  return 0;
}

}  // namespace cpu
}  // namespace kernels
