// scatter and index_put on the CPU: straightforward loops over the plan's
// positions, in row-major order. Every index is checked before anything is
// written, so a failed call leaves out as the copy of self made before it.

#include <string>
#include <vector>

#include "runtime/errors.h"
#include "shims/host_elements.h"
#include "shims/indexing/element_ops.h"
#include "shims/indexing/indexing.h"

namespace aotirt {
namespace indexing {
namespace {

int64_t read_index(const void* data, bool int32, int64_t offset) {
  return int32 ? static_cast<const int32_t*>(data)[offset] : static_cast<const int64_t*>(data)[offset];
}

aotirt_status out_of_bounds(const char* shim, int64_t value, int64_t dim, int64_t size) {
  return fail(AOTIRT_ERROR_VALUE, std::string(shim) + ": index " + std::to_string(value) +
                                      " is out of bounds for dimension " + std::to_string(dim) + " with size " +
                                      std::to_string(size));
}

// Calls fn(coords) for every position of a shape, row-major.
template <typename Fn>
void for_each_position(int32_t ndim, const int64_t* sizes, int64_t numel, Fn&& fn) {
  int64_t at[kMaxDims] = {};
  for (int64_t i = 0; i < numel; ++i) {
    fn(static_cast<const int64_t*>(at));
    for (int32_t d = ndim - 1; d >= 0; --d) {
      if (++at[d] < sizes[d]) break;
      at[d] = 0;
    }
  }
}

int64_t dot(const int64_t* at, const int64_t* strides, int32_t ndim) {
  int64_t offset = 0;
  for (int32_t d = 0; d < ndim; ++d) offset += at[d] * strides[d];
  return offset;
}

template <typename T>
void scatter_loop(const ScatterPlan& p) {
  T* out = static_cast<T*>(p.out);
  const T* src = static_cast<const T*>(p.src);
  const T value = from_value<T>(p.value);
  // The element of out a position writes: out's offset with the index value along dim.
  auto target = [&](const int64_t* at, int64_t* linear) {
    const int64_t i = read_index(p.index, p.index_is_int32, dot(at, p.index_strides, p.ndim));
    int64_t offset = 0, flat = 0;
    for (int32_t d = 0; d < p.ndim; ++d) {
      const int64_t c = d == p.dim ? i : at[d];
      offset += c * p.out_strides[d];
      flat = flat * p.out_sizes[d] + c;
    }
    if (linear) *linear = flat;
    return offset;
  };
  if (p.op != Op::Assign && !p.include_self)
    for_each_position(p.ndim, p.sizes, p.numel, [&](const int64_t* at) { out[target(at, nullptr)] = identity<T>(p.op); });
  for_each_position(p.ndim, p.sizes, p.numel, [&](const int64_t* at) {
    const T v = p.src_is_value ? value : src[dot(at, p.src_strides, p.ndim)];
    T& o = out[target(at, nullptr)];
    o = p.op == Op::Assign ? v : from_acc<T>(combine(p.op, to_acc(o), to_acc(v)));
  });
  if (p.op != Op::Mean) return;
  std::vector<int64_t> counts(static_cast<size_t>(p.out_numel), p.include_self ? 1 : 0);
  for_each_position(p.ndim, p.sizes, p.numel, [&](const int64_t* at) {
    int64_t linear = 0;
    target(at, &linear);
    ++counts[static_cast<size_t>(linear)];
  });
  int64_t linear = 0;
  for_each_position(p.out_ndim, p.out_sizes, p.out_numel, [&](const int64_t* at) {
    const int64_t c = counts[static_cast<size_t>(linear++)];
    if (c > 1) {
      T& o = out[dot(at, p.out_all_strides, p.out_ndim)];
      o = divide(o, c);
    }
  });
}

template <typename T>
void index_put_loop(const IndexPutPlan& p) {
  T* out = static_cast<T*>(p.out);
  const T* values = static_cast<const T*>(p.values);
  for_each_position(p.ndim, p.sizes, p.numel, [&](const int64_t* at) {
    int64_t offset = dot(at, p.out_strides, p.ndim);
    for (int32_t k = 0; k < p.num_index; ++k) {
      int64_t i = read_index(p.index[k], p.index_is_int32[k], dot(at, p.index_strides[k], p.ndim));
      if (i < 0) i += p.index_size[k];
      offset += i * p.index_stride[k];
    }
    const T v = values[dot(at, p.value_strides, p.ndim)];
    T& o = out[offset];
    o = p.accumulate ? from_acc<T>(combine(Op::Add, to_acc(o), to_acc(v))) : v;
  });
}

}  // namespace

aotirt_status scatter_cpu(const char* shim, const ScatterPlan& p) {
  if (p.numel == 0) return AOTIRT_OK;
  aotirt_status status = AOTIRT_OK;
  for_each_position(p.ndim, p.sizes, p.numel, [&](const int64_t* at) {
    const int64_t i = read_index(p.index, p.index_is_int32, dot(at, p.index_strides, p.ndim));
    if (status == AOTIRT_OK && (i < 0 || i >= p.dim_size)) status = out_of_bounds(shim, i, p.dim, p.dim_size);
  });
  if (status != AOTIRT_OK) return status;
  host::dispatch_dtype(p.dtype, [&](auto zero) { scatter_loop<decltype(zero)>(p); });
  return AOTIRT_OK;
}

aotirt_status index_put_cpu(const char* shim, const IndexPutPlan& p) {
  if (p.numel == 0) return AOTIRT_OK;
  aotirt_status status = AOTIRT_OK;
  for_each_position(p.ndim, p.sizes, p.numel, [&](const int64_t* at) {
    for (int32_t k = 0; status == AOTIRT_OK && k < p.num_index; ++k) {
      const int64_t i = read_index(p.index[k], p.index_is_int32[k], dot(at, p.index_strides[k], p.ndim));
      if (i < -p.index_size[k] || i >= p.index_size[k])
        status = out_of_bounds(shim, i, p.index_dim[k], p.index_size[k]);
    }
  });
  if (status != AOTIRT_OK) return status;
  host::dispatch_dtype(p.dtype, [&](auto zero) { index_put_loop<decltype(zero)>(p); });
  return AOTIRT_OK;
}

}  // namespace indexing
}  // namespace aotirt
