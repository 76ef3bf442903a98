#include "kernels.h"

namespace kernels {
namespace cpu {

int conv1d_k3(const float* x, const float* w, const float* bias, float* out, int64_t t, int64_t cin,
              int64_t cout, void* /*stream*/) {
  for (int64_t s = 0; s < t; ++s) {
    for (int64_t o = 0; o < cout; ++o) {
      const float* wo = w + o * cin * 3;
      float acc = bias ? bias[o] : 0.0f;
      // Same order as the CUDA kernel: channels outer, the three taps inner.
      for (int64_t c = 0; c < cin; ++c) {
        for (int64_t j = 0; j < 3; ++j) {
          const int64_t row = s + j - 1;  // padding 1: rows -1 and t are zero
          if (row >= 0 && row < t) acc += wo[c * 3 + j] * x[row * cin + c];
        }
      }
      out[s * cout + o] = acc;
    }
  }
  return 0;
}

}  // namespace cpu
}  // namespace kernels
