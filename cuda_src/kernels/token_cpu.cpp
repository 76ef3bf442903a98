// The kernels that handle tokens: argmax picks one, embedding looks one up.
#include <cmath>
#include <limits>

#include "kernels.h"

namespace kernels {
namespace cpu {

int argmax(const float* x, int64_t n, int64_t* out, void* /*stream*/) {
  int64_t best = n > 0 ? 0 : -1;
  for (int64_t i = 1; i < n; ++i) {
    if (std::isnan(x[best])) break;  // the first NaN wins, as in numpy
    if (std::isnan(x[i]) || x[i] > x[best]) best = i;  // strictly greater: the first of ties stays
  }
  out[0] = best;
  return 0;
}

int embedding(const float* table, const int64_t* token, float* out, int64_t vocab, int64_t dim,
              void* /*stream*/) {
  const int64_t row = *token;
  const bool valid = row >= 0 && row < vocab;
  for (int64_t d = 0; d < dim; ++d) out[d] = valid ? table[row * dim + d] : std::numeric_limits<float>::quiet_NaN();
  return 0;
}

}  // namespace cpu
}  // namespace kernels
