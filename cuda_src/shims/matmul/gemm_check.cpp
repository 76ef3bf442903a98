// Checking a matmul shim's operands and building its Problem (gemm.h).

#include <algorithm>
#include <string>

#include "runtime/dtypes.h"
#include "runtime/errors.h"
#include "shims/matmul/gemm.h"

namespace aotirt {
namespace matmul {
namespace {

std::string shape_of(const Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.ndim; ++d) s += (d ? ", " : "") + std::to_string(t.sizes[d]);
  return s + "]";
}

const char* device_name(int32_t device_type) { return device_type == AOTIRT_DEVICE_CUDA ? "cuda" : "cpu"; }

std::string where(const Tensor& t) {
  std::string s = device_name(t.storage->device_type);
  if (t.storage->device_type == AOTIRT_DEVICE_CUDA) s += ":" + std::to_string(t.storage->device_index);
  return s;
}

// "<shim>: ", the start of every message. Built only once a check has failed:
// the checks run on every call, and a shim's name is longer than fits in a
// std::string without a heap allocation.
std::string prefix(const char* name) { return std::string(name) + ": "; }

bool supported_dtype(int32_t dtype) { return is_floating(dtype); }

// A 3-D view [batch, rows, cols] of a 2-D or 3-D tensor.
Tensor as_batched(const Tensor& t) {
  if (t.ndim == 3) return t;
  Tensor v = t;
  v.ndim = 3;
  v.sizes[0] = 1;
  v.strides[0] = 0;  // one matrix: the batch stride is never used
  v.sizes[1] = t.sizes[0];
  v.sizes[2] = t.sizes[1];
  v.strides[1] = t.strides[0];
  v.strides[2] = t.strides[1];
  return v;
}

// Lowest and one-past-highest byte `t` touches; equal when it touches none.
void byte_range(const Tensor& t, uintptr_t* lo, uintptr_t* hi) {
  *lo = *hi = reinterpret_cast<uintptr_t>(t.data());
  if (t.numel() == 0) return;
  int64_t low = 0, high = 0;
  for (int64_t d = 0; d < t.ndim; ++d) {
    int64_t span = (t.sizes[d] - 1) * t.strides[d];
    (span < 0 ? low : high) += span;
  }
  const int64_t item = static_cast<int64_t>(t.itemsize());
  *lo += low * item;  // unsigned wrap-around gives the right address for negative `low`
  *hi += (high + 1) * item;
}

bool overlap(const Tensor& x, const Tensor& y) {
  uintptr_t xl, xh, yl, yh;
  byte_range(x, &xl, &xh);
  byte_range(y, &yl, &yh);
  return xl < yh && yl < xh;
}

// Same first element and same steps through every dimension that has more
// than one element: the two views name the same elements in the same order.
bool same_elements(const Tensor& x, const Tensor& y) {
  if (x.data() != y.data() || x.ndim != y.ndim) return false;
  for (int64_t d = 0; d < x.ndim; ++d)
    if (x.sizes[d] != y.sizes[d] || (x.sizes[d] > 1 && x.strides[d] != y.strides[d])) return false;
  return true;
}

}  // namespace

aotirt_status prepare(const char* name, int32_t device_type, const Tensor* out, const Tensor* self,
                      const Tensor* mat1, const Tensor* mat2, double beta, double alpha, bool batched,
                      Problem* p, bool int8) {
  const bool addmm = self != nullptr;
  // In torch's signatures the left factor of mm and bmm is called `self`.
  const char* left_name = addmm ? "mat1" : "self";
  if (!out || !mat1 || !mat2) return fail(AOTIRT_ERROR_VALUE, prefix(name) + "a tensor handle is NULL");
  if (out->storage) AOTIRT_TRY(check_writable(*out, prefix(name) + "out"));

  struct Arg {
    const char* name;
    const Tensor* t;
  } args[] = {{"out", out}, {left_name, mat1}, {"mat2", mat2}, {"self", addmm ? self : nullptr}};
  for (const Arg& arg : args) {
    if (!arg.t) continue;
    if (!arg.t->storage) return fail(AOTIRT_ERROR_VALUE, prefix(name) + arg.name + " has no storage");
    if (int8) {
      const int32_t want = arg.t == out ? AOTIRT_DTYPE_INT32 : AOTIRT_DTYPE_INT8;
      if (arg.t->dtype != want)
        return fail(AOTIRT_ERROR_TYPE, prefix(name) + arg.name + " is " + dtype_name(arg.t->dtype) + ", expected " +
                                           dtype_name(want) + " (int8 factors, an int32 out)");
    } else if (!supported_dtype(arg.t->dtype)) {
      return fail(AOTIRT_ERROR_TYPE, prefix(name) + arg.name + " is " + dtype_name(arg.t->dtype) +
                                         "; supported dtypes are float32, float64, float16 and bfloat16");
    }
    if (!int8 && arg.t->dtype != out->dtype)
      return fail(AOTIRT_ERROR_TYPE, prefix(name) + arg.name + " is " + dtype_name(arg.t->dtype) + " but out is " +
                                         dtype_name(out->dtype) + " (every operand must have one dtype)");
    if (arg.t->storage->device_type != device_type)
      return fail(AOTIRT_ERROR_VALUE, prefix(name) + arg.name + " is on " + where(*arg.t) + ", expected " +
                                          device_name(device_type));
    if (arg.t->storage->device_index != out->storage->device_index && device_type == AOTIRT_DEVICE_CUDA)
      return fail(AOTIRT_ERROR_VALUE, prefix(name) + arg.name + " is on " + where(*arg.t) + " but out is on " +
                                          where(*out) + " (every operand must be on one device)");
  }

  const int64_t rank = batched ? 3 : 2;
  for (int i = 0; i < 3; ++i) {  // self (args[3]) broadcasts: checked below
    const Arg& arg = args[i];
    if (arg.t->ndim != rank)
      return fail(AOTIRT_ERROR_VALUE, prefix(name) + arg.name + " must be " + std::to_string(rank) + "-D, got " +
                                          std::to_string(arg.t->ndim) + "-D " + shape_of(*arg.t));
  }
  Problem q;
  q.name = name;
  q.a = as_batched(*mat1);
  q.b = as_batched(*mat2);
  q.out = as_batched(*out);
  q.batch = q.a.sizes[0];
  q.m = q.a.sizes[1];
  q.k = q.a.sizes[2];
  q.n = q.b.sizes[2];
  if (q.b.sizes[0] != q.batch)
    return fail(AOTIRT_ERROR_VALUE, prefix(name) + left_name + " " + shape_of(*mat1) + " and mat2 " + shape_of(*mat2) +
                                        " have different batch sizes");
  if (q.b.sizes[1] != q.k)
    return fail(AOTIRT_ERROR_VALUE, prefix(name) + left_name + " " + shape_of(*mat1) + " and mat2 " + shape_of(*mat2) +
                                        " cannot be multiplied (inner sizes " + std::to_string(q.k) + " and " +
                                        std::to_string(q.b.sizes[1]) + " differ)");
  if (q.out.sizes[0] != q.batch || q.out.sizes[1] != q.m || q.out.sizes[2] != q.n) {
    Tensor expected;
    expected.ndim = rank;
    const int64_t dims[] = {q.batch, q.m, q.n};
    for (int64_t d = 0; d < rank; ++d) expected.sizes[d] = dims[3 - rank + d];
    return fail(AOTIRT_ERROR_VALUE, prefix(name) + "out is " + shape_of(*out) + ", expected " + shape_of(expected));
  }
  for (int64_t d = 0; d < 3 && q.out.numel() > 0; ++d)  // an empty out is never written
    if (q.out.sizes[d] > 1 && q.out.strides[d] == 0)
      return fail(AOTIRT_ERROR_VALUE, prefix(name) + "out has stride 0 in a dimension of size " +
                                          std::to_string(q.out.sizes[d]) +
                                          " (its elements overlap, so it cannot be written)");

  if (addmm) {
    // Broadcast self to [M, N] as torch does: align trailing dimensions; a
    // missing or size-1 dimension repeats (stride 0).
    if (self->ndim > rank)
      return fail(AOTIRT_ERROR_VALUE, prefix(name) + "self must have at most " + std::to_string(rank) +
                                          " dimensions, got " + shape_of(*self));
    Tensor s = *self;
    s.ndim = 3;
    const int64_t target[] = {batched ? q.batch : 1, q.m, q.n};
    for (int64_t d = 2; d >= 0; --d) {
      int64_t from = d - (3 - self->ndim);
      int64_t size = from >= 0 ? self->sizes[from] : 1;
      int64_t stride = from >= 0 ? self->strides[from] : 0;
      if (size != target[d] && size != 1)
        return fail(AOTIRT_ERROR_VALUE, prefix(name) + "self " + shape_of(*self) + " does not broadcast to [" +
                                            (batched ? std::to_string(q.batch) + ", " : std::string()) +
                                            std::to_string(q.m) + ", " + std::to_string(q.n) + "]");
      s.sizes[d] = target[d];
      s.strides[d] = size == target[d] ? stride : 0;
    }
    // beta == 0 means self is not read at all: torch's rule, so that NaN or
    // garbage in it cannot reach out.
    q.has_self = beta != 0.0;
    q.self = std::move(s);
  }
  q.alpha = alpha;
  q.beta = q.has_self ? beta : 0.0;

  q.int8 = int8;
  q.out_is_self = q.has_self && same_elements(q.out, q.self);
  q.out_overlaps_input = overlap(q.out, q.a) || overlap(q.out, q.b) ||
                         (q.has_self && !q.out_is_self && overlap(q.out, q.self));
  *p = std::move(q);
  return AOTIRT_OK;
}

aotirt_status empty_like(const Tensor& like, const StreamRef& stream, Tensor* out) {
  Tensor t;
  t.ndim = like.ndim;
  t.dtype = like.dtype;
  for (int64_t d = 0; d < like.ndim; ++d) t.sizes[d] = like.sizes[d];
  contiguous_strides(t.ndim, t.sizes, t.strides);
  AOTIRT_TRY(allocate_storage(static_cast<size_t>(like.numel()) * like.itemsize(), like.storage->device_type,
                              like.storage->device_index, stream, &t.storage));
  t.stream = stream;
  *out = std::move(t);
  return AOTIRT_OK;
}

}  // namespace matmul
}  // namespace aotirt
