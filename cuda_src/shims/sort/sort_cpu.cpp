// The CPU sort behind aoti_torch_cpu_{sort,sort_stable,topk}: each line
// along dim is ordered as a list of positions, by torch's comparison (NaN
// largest, as torch's KeyValueCompAsc / KeyValueCompDesc) with ties broken
// by position, which makes the order total: std::sort then gives exactly
// what a stable sort gives, and std::partial_sort the first k of it (topk).

#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>
#include <vector>

#include "shims/host_elements.h"
#include "shims/sort/sort.h"

namespace aotirt {
namespace sort {
namespace {

// What elements are compared as: float16 and bfloat16 as float, bool as
// 0/1, the rest as themselves (int64 exactly, never through double).
template <typename T>
using Key = std::conditional_t<std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, float,
                               std::conditional_t<std::is_same_v<T, bool>, int, T>>;

template <typename K>
bool is_nan(K v) {
  if constexpr (std::is_floating_point_v<K>) return std::isnan(v);
  return false;
}

// a < b in torch's order: NaN after every number, NaNs equal, -0.0 == 0.0.
template <typename K>
bool less(K a, K b) {
  return is_nan(b) ? !is_nan(a) : a < b;
}

template <typename T>
void sort_lines(const Call& call) {
  using K = Key<T>;
  const Tensor& self = *call.self;
  const Tensor& values = *call.values;
  const Tensor& indices = *call.indices;
  const T* x = static_cast<const T*>(self.data());
  T* v = static_cast<T*>(values.data());
  int64_t* ix = static_cast<int64_t*>(indices.data());
  const int64_t n = call.n, k = call.k, dim = call.dim;
  const int64_t x_step = self.ndim ? self.strides[dim] : 0;
  const int64_t out_step = values.ndim ? values.strides[dim] : 0;  // indices share values' layout
  const int64_t lines = n ? self.numel() / n : 0;
  std::vector<K> keys(static_cast<size_t>(n));
  std::vector<int64_t> order(static_cast<size_t>(n));
  const bool descending = call.descending;
  auto before = [&](int64_t i, int64_t j) {
    const K a = keys[i], b = keys[j];
    if (descending ? less(b, a) : less(a, b)) return true;
    if (descending ? less(a, b) : less(b, a)) return false;
    return i < j;  // equal keys keep their input order
  };
  int64_t index[AOTIRT_MAX_DIMS] = {};  // of the line's first element; index[dim] stays 0
  for (int64_t line = 0; line < lines && k > 0; ++line) {
    const T* xl = x + host::offset_at(self, index);
    const int64_t out_at = host::offset_at(values, index);
    for (int64_t i = 0; i < n; ++i) keys[i] = host::cast<K>(xl[i * x_step]);
    std::iota(order.begin(), order.end(), int64_t{0});
    if (k < n)
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
    else
      std::sort(order.begin(), order.end(), before);
    for (int64_t t = 0; t < k; ++t) {
      v[out_at + t * out_step] = xl[order[t] * x_step];
      ix[out_at + t * out_step] = order[t];
    }
    for (int64_t d = self.ndim - 1; d >= 0; --d) {  // next line: odometer over dims other than `dim`
      if (d == dim) continue;
      if (++index[d] < self.sizes[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace

aotirt_status run_cpu(const Call& call) {
  const bool known = host::dispatch_dtype(call.self->dtype, [&](auto t) { sort_lines<decltype(t)>(call); });
  if (!known)
    return fail(AOTIRT_ERROR_TYPE, std::string(call.name) + ": no sort for " + dtype_name(call.self->dtype));
  return AOTIRT_OK;
}

}  // namespace sort
}  // namespace aotirt
