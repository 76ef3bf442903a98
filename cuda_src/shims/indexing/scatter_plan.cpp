// The checks torch makes of scatter's arguments (scatter_gather_dtype_check,
// scatter_shape_check, with its messages), and the plan of the walk.

#include <cstring>
#include <string>

#include "runtime/copy.h"
#include "runtime/dtypes.h"
#include "runtime/errors.h"
#include "shims/indexing/indexing.h"
#include "shims/indexing/plan_checks.h"

namespace aotirt {
namespace indexing {
namespace {

std::string shape_of(const Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.ndim; ++d) s += (d ? ", " : "") + std::to_string(t.sizes[d]);
  return s + "]";
}

// A 0-d tensor takes part as a 1-d tensor of one element, as torch's
// ensure_nonempty_dim/size/stride make it.
int64_t dims(const Tensor& t) { return t.ndim ? t.ndim : 1; }
int64_t size_at(const Tensor& t, int64_t d) { return t.ndim ? t.sizes[d] : 1; }
int64_t stride_at(const Tensor& t, int64_t d) { return t.ndim ? t.strides[d] : 0; }

}  // namespace

bool same_device(const Tensor& a, const Tensor& b) {
  return a.storage->device_type == b.storage->device_type &&
         (a.storage->device_type == AOTIRT_DEVICE_CPU || a.storage->device_index == b.storage->device_index);
}

bool same_shape(const Tensor& a, const Tensor& b) {
  if (a.ndim != b.ndim) return false;
  for (int64_t d = 0; d < a.ndim; ++d)
    if (a.sizes[d] != b.sizes[d]) return false;
  return true;
}

bool supported_dtype(int32_t dtype) {
  switch (dtype) {
    case AOTIRT_DTYPE_UINT8: case AOTIRT_DTYPE_INT8: case AOTIRT_DTYPE_INT16: case AOTIRT_DTYPE_INT32:
    case AOTIRT_DTYPE_INT64: case AOTIRT_DTYPE_FLOAT16: case AOTIRT_DTYPE_FLOAT32: case AOTIRT_DTYPE_FLOAT64:
    case AOTIRT_DTYPE_BOOL: case AOTIRT_DTYPE_BFLOAT16:
      return true;
    default:
      return false;
  }
}

std::string shape_string(const Tensor& t) { return shape_of(t); }

aotirt_status parse_reduce(const char* shim, const char* reduce, Op* op) {
  if (!reduce) return fail(AOTIRT_ERROR_VALUE, std::string(shim) + ": reduce is NULL");
  const struct { const char* name; Op op; } names[] = {
      {"sum", Op::Add}, {"prod", Op::Mul}, {"mean", Op::Mean}, {"amax", Op::Max}, {"amin", Op::Min}};
  for (const auto& n : names)
    if (std::strcmp(reduce, n.name) == 0) {
      *op = n.op;
      return AOTIRT_OK;
    }
  return fail(AOTIRT_ERROR_VALUE, std::string(shim) + ": reduce argument must be either sum, prod, mean, amax or "
                                                      "amin, got " + reduce);
}

aotirt_status check_out(const char* shim, const Tensor& out, const Tensor& self) {
  if (!same_device(out, self))
    return fail(AOTIRT_ERROR_VALUE, std::string(shim) + ": out and self are on different devices");
  if (out.dtype != self.dtype)
    return fail(AOTIRT_ERROR_TYPE, std::string(shim) + ": out is " + dtype_name(out.dtype) + ", self is " +
                                       dtype_name(self.dtype) + " (they must match)");
  if (!same_shape(out, self))
    return fail(AOTIRT_ERROR_VALUE, std::string(shim) + ": out has shape " + shape_of(out) + ", self has " +
                                        shape_of(self) + " (out must have self's shape)");
  if (!supported_dtype(self.dtype))
    return fail(AOTIRT_ERROR_TYPE, std::string(shim) + ": dtype " + dtype_name(self.dtype) + " is not supported");
  return check_writable(out, std::string(shim) + ": out");
}

aotirt_status plan_scatter(const char* shim, const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index,
                           const Tensor* src, double value, Op op, bool include_self, ScatterPlan* plan) {
  AOTIRT_TRY(check_out(shim, out, self));
  if (!same_device(index, self) || (src && !same_device(*src, self)))
    return fail(AOTIRT_ERROR_VALUE, std::string(shim) + ": self, index and src must be on one device");
  if (index.dtype != AOTIRT_DTYPE_INT64 && index.dtype != AOTIRT_DTYPE_INT32)
    return fail(AOTIRT_ERROR_TYPE, std::string(shim) + ": expected dtype int64 (or int32) for index, got " +
                                       dtype_name(index.dtype));
  if (src && src->dtype != self.dtype)
    return fail(AOTIRT_ERROR_TYPE, std::string(shim) + ": expected self.dtype to be equal to src.dtype (" +
                                       dtype_name(self.dtype) + " and " + dtype_name(src->dtype) + ")");
  if (op == Op::Mean && self.dtype == AOTIRT_DTYPE_BOOL)
    return fail(AOTIRT_ERROR_TYPE, std::string(shim) + ": reduce=\"mean\" is not implemented for bool (as in torch)");
  const int64_t rank = dims(self);
  if (dim < -rank || dim >= rank)
    return fail(AOTIRT_ERROR_VALUE, std::string(shim) + ": dimension out of range (expected to be in range of [" +
                                        std::to_string(-rank) + ", " + std::to_string(rank - 1) + "], but got " +
                                        std::to_string(dim) + ")");
  if (dim < 0) dim += rank;

  ScatterPlan p;
  p.numel = index.numel();
  if (p.numel != 0) {  // torch checks shapes only when there is something to scatter
    if (dims(index) != rank)
      return fail(AOTIRT_ERROR_VALUE,
                  std::string(shim) + ": index tensor must have the same number of dimensions as self tensor");
    if (src && dims(*src) != rank)
      return fail(AOTIRT_ERROR_VALUE,
                  std::string(shim) + ": index tensor must have the same number of dimensions as src tensor");
    for (int64_t d = 0; d < rank; ++d) {
      const bool too_big_for_self = d != dim && size_at(index, d) > size_at(self, d);
      const bool too_big_for_src = src && size_at(index, d) > size_at(*src, d);
      if (too_big_for_self || too_big_for_src)
        return fail(AOTIRT_ERROR_VALUE, std::string(shim) + ": expected index " + shape_of(index) +
                                            " to be no larger than self " + shape_of(self) + " apart from dimension " +
                                            std::to_string(dim) +
                                            (src ? " and to be no larger size than src " + shape_of(*src) : ""));
    }
  }
  p.ndim = static_cast<int32_t>(rank);
  for (int64_t d = 0; d < rank; ++d) {
    p.sizes[d] = size_at(index, d);
    p.index_strides[d] = stride_at(index, d);
    p.src_strides[d] = src ? stride_at(*src, d) : 0;
    p.out_strides[d] = stride_at(out, d);
  }
  p.dim = static_cast<int32_t>(dim);
  p.dim_size = size_at(self, dim);
  p.out = out.data();
  p.index = index.data();
  p.index_is_int32 = index.dtype == AOTIRT_DTYPE_INT32;
  p.src = src ? src->data() : nullptr;
  p.src_is_value = src == nullptr;
  p.value = value;
  p.dtype = self.dtype;
  p.op = op;
  p.include_self = include_self;
  p.out_ndim = static_cast<int32_t>(rank);
  for (int64_t d = 0; d < rank; ++d) {
    p.out_sizes[d] = size_at(out, d);
    p.out_all_strides[d] = stride_at(out, d);
  }
  p.out_numel = out.numel();
  *plan = p;
  return AOTIRT_OK;
}

aotirt_status copy_self_into_out(Tensor& out, const Tensor& self, Stream* stream) {
  bool same = out.storage.get() == self.storage.get() && out.data() == self.data() && same_shape(out, self);
  for (int64_t d = 0; same && d < out.ndim; ++d) same = out.strides[d] == self.strides[d];
  if (same) return AOTIRT_OK;
  return copy_between(out, self, stream);
}

}  // namespace indexing
}  // namespace aotirt
