// The random shims (aoti_torch_{cpu,cuda}_{rand,randn,randint,randint_low,
// randint_low_out}): a checked Draw into an output tensor, filled on the CPU
// or on CUDA from the thread's current generator (runtime/rng.h).
//
// Values are written in the output's logical (row-major) order: value i of
// the draw goes to the element whose row-major index is i, whatever the
// output's strides, so a strided `out` holds what a contiguous one would.
#pragma once

#include <cstdint>

#include "runtime/errors.h"
#include "runtime/tensor.h"
#include "shims/random/draw.h"

namespace aotirt {
namespace random {

// The Philox blocks a draw of `n` values of `dtype` uses.
uint64_t blocks_for(const Draw& d, int32_t dtype, int64_t n);

// Fills `out` (a CPU tensor) from the current generator.
aotirt_status run_cpu(const char* name, const Draw& d, const Tensor& out);
// Queues the fill of `out` (a CUDA tensor) on the current stream of its
// device, reading and then advancing the generator's device counter; no
// host wait, and a CUDA graph replay draws new values.
aotirt_status run_cuda(const char* name, const Draw& d, Tensor& out);

// Where value i goes: the offset of row-major element i of a view.
struct Layout {
  int ndim = 0;
  bool contiguous = true;
  int64_t sizes[AOTIRT_MAX_DIMS] = {};
  int64_t strides[AOTIRT_MAX_DIMS] = {};

  AOTIRT_HD int64_t offset(int64_t i) const {
    if (contiguous) return i;
    int64_t at = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      at += (i % sizes[d]) * strides[d];
      i /= sizes[d];
    }
    return at;
  }
};

Layout layout_of(const Tensor& t);

}  // namespace random
}  // namespace aotirt
