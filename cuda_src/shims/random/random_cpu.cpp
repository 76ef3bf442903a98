// The CPU fill of the random shims: one loop over Philox blocks (draw.h),
// the same values the CUDA kernel writes for the same seed and counters.

#include "runtime/rng.h"
#include "shims/host_elements.h"
#include "shims/random/random.h"

namespace aotirt {
namespace random {

Layout layout_of(const Tensor& t) {
  Layout l;
  l.ndim = static_cast<int>(t.ndim);
  l.contiguous = t.is_contiguous();
  for (int64_t d = 0; d < t.ndim; ++d) {
    l.sizes[d] = t.sizes[d];
    l.strides[d] = t.strides[d];
  }
  return l;
}

uint64_t blocks_for(const Draw& d, int32_t dtype, int64_t n) {
  uint64_t per = 4;
  host::dispatch_dtype(dtype, [&](auto zero) { per = per_block<decltype(zero)>(d); });
  return (static_cast<uint64_t>(n) + per - 1) / per;
}

aotirt_status run_cpu(const char* name, const Draw& d, const Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return AOTIRT_OK;  // torch draws nothing for an empty tensor
  const uint64_t blocks = blocks_for(d, out.dtype, n);
  uint64_t seed = 0, first = 0;
  AOTIRT_TRY(current_generator().reserve_host(blocks, &seed, &first));
  const Layout layout = layout_of(out);
  const bool known = host::dispatch_dtype(out.dtype, [&](auto zero) {
    using T = decltype(zero);
    T* data = static_cast<T*>(out.data());
    const int per = per_block<T>(d);
    T values[4];
    for (uint64_t b = 0; b < blocks; ++b) {
      block_values<T>(d, seed, first + b, values);
      for (int j = 0; j < per; ++j) {
        const int64_t i = static_cast<int64_t>(b) * per + j;
        if (i < n) data[layout.offset(i)] = values[j];
      }
    }
  });
  if (!known)
    return fail(AOTIRT_ERROR_TYPE, std::string(name) + ": dtype " + dtype_name(out.dtype) + " is not supported");
  return AOTIRT_OK;
}

}  // namespace random
}  // namespace aotirt
