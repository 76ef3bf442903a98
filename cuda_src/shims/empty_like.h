// torch's empty_like(t) layout (memory_format=preserve), which several meta
// functions give their outputs (sort's, attention's): the shims that lay
// outputs out so share this one definition.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "runtime/tensor.h"

namespace aotirt {

// torch's is_non_overlapping_and_dense: the elements fill their memory
// exactly, in some order of the dimensions.
inline bool non_overlapping_and_dense(const Tensor& t) {
  int64_t order[AOTIRT_MAX_DIMS];
  for (int64_t d = 0; d < t.ndim; ++d) order[d] = d;
  // By stride, dimensions of size 0 or 1 last (their strides never matter).
  std::stable_sort(order, order + t.ndim, [&](int64_t a, int64_t b) {
    if (t.sizes[a] < 2) return false;
    if (t.sizes[b] < 2) return true;
    return t.strides[a] < t.strides[b];
  });
  int64_t expected = 1;
  for (int64_t i = 0; i < t.ndim; ++i) {
    const int64_t d = order[i];
    if (t.sizes[d] < 2) return true;
    if (t.strides[d] != expected) return false;
    expected *= t.sizes[d];
  }
  return true;
}

// torch's empty_like(t) (memory_format=preserve): t's own strides when they
// are dense, else dense strides in t's order of dimensions (ATen's
// infer_dense_strides: an insertion sort by stride, ties to the smaller size,
// zero strides staying where they are).
inline void empty_like_strides(const Tensor& t, int64_t* out) {
  if (non_overlapping_and_dense(t)) {
    for (int64_t d = 0; d < t.ndim; ++d) out[d] = t.strides[d];
    return;
  }
  const int64_t n = t.ndim;
  int64_t perm[AOTIRT_MAX_DIMS];  // innermost first
  for (int64_t i = 0; i < n; ++i) perm[i] = n - 1 - i;
  auto should_swap = [&](int64_t d0, int64_t d1) {
    const int64_t s0 = t.strides[d0], s1 = t.strides[d1];
    if (s0 == 0 || s1 == 0) return 0;
    if (s0 < s1) return -1;
    if (s0 > s1) return 1;
    return t.sizes[d0] > t.sizes[d1] ? 1 : 0;
  };
  for (int64_t i = 1; i < n; ++i) {
    int64_t d1 = i;
    for (int64_t d0 = i - 1; d0 >= 0; --d0) {
      const int c = should_swap(perm[d0], perm[d1]);
      if (c > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  int64_t stride = 1;
  for (int64_t i = 0; i < n; ++i) {
    out[perm[i]] = stride;
    if (t.sizes[perm[i]] > 1) stride *= t.sizes[perm[i]];
  }
}

}  // namespace aotirt
