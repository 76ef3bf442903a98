// Scatter and index_put (aten.scatter / scatter_reduce.two / index_put_),
// shared by the CPU loops and the CUDA kernels: the argument checks turn
// torch's tensors into a plan (sizes and strides of one walk), which each
// device then carries out. No library provides these ops (cuBLAS and cuDNN
// have no scatter), so the kernels are aotirt's own.
//
// Semantics are torch's: out (of self's shape and dtype) first receives a
// copy of self unless it is self; then
//   scatter:  out[..., index[p], ...] (op)= src[p] (or a scalar value) for
//             every position p of index, the index along `dim`;
//   scatter_reduce: the same with sum/prod/mean/amax/amin, include_self
//             false first setting every target to the reduction's identity;
//             mean divides by the number of values (1 more with self), with
//             floor division for integers;
//   index_put: out[indices] = values (accumulate: +=), values broadcast to
//             the indexing result's shape, as torch's advanced indexing.
// Index values out of range are an error on the CPU (checked before any
// write). On CUDA, where torch device-asserts, the kernels check each index
// and skip the write: no memory outside out is touched and nothing waits.
// Writes with repeated indices land in no particular order, as in torch.
#pragma once

#include <cstdint>
#include <vector>

#include "aotirt/aotirt.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace aotirt {
namespace indexing {

constexpr int kMaxDims = AOTIRT_MAX_DIMS;

// What a write does to its target. Mean is Add followed by a divide pass.
enum class Op : int32_t { Assign, Add, Mul, Max, Min, Mean };

// One walk over the positions of `index` (scatter).
struct ScatterPlan {
  int32_t ndim = 0;                    // of index (a 0-d index counts as 1-d of size 1)
  int64_t sizes[kMaxDims] = {};        // index's
  int64_t index_strides[kMaxDims] = {};
  int64_t src_strides[kMaxDims] = {};  // src's, at the same positions (src_is_value: unused)
  int64_t out_strides[kMaxDims] = {};  // out's; along `dim` the index value picks the element
  int32_t dim = 0;
  int64_t dim_size = 0;                // out's size along dim: indices lie in [0, dim_size)
  int64_t numel = 0;                   // of index
  void* out = nullptr;
  const void* index = nullptr;
  bool index_is_int32 = false;
  const void* src = nullptr;
  bool src_is_value = false;
  double value = 0;                    // the scalar src
  int32_t dtype = 0;                   // of out, self and src
  Op op = Op::Assign;
  bool include_self = true;
  // Mean: out's sizes, to count values per element in a contiguous buffer.
  int32_t out_ndim = 0;
  int64_t out_sizes[kMaxDims] = {};
  int64_t out_all_strides[kMaxDims] = {};
  int64_t out_numel = 0;
};

// One walk over the positions of the indexing result (index_put).
struct IndexPutPlan {
  int32_t ndim = 0;                       // of the result shape
  int64_t sizes[kMaxDims] = {};
  int64_t out_strides[kMaxDims] = {};     // for the sliced (":") dimensions, 0 for indexed ones
  int64_t value_strides[kMaxDims] = {};   // values broadcast to the result shape
  int32_t num_index = 0;                  // index tensors after expansion
  const void* index[kMaxDims] = {};
  bool index_is_int32[kMaxDims] = {};
  int64_t index_strides[kMaxDims][kMaxDims] = {};  // [tensor][result dim], broadcast
  int64_t index_size[kMaxDims] = {};      // out's size along the dim each indexes
  int64_t index_stride[kMaxDims] = {};    // and its stride there
  int32_t index_dim[kMaxDims] = {};       // that dim, for messages
  int64_t numel = 0;                      // of the result
  void* out = nullptr;
  const void* values = nullptr;
  int32_t dtype = 0;
  bool accumulate = false;
};

// The reduction named by torch's string ("sum", "prod", "mean", "amax", "amin").
aotirt_status parse_reduce(const char* shim, const char* reduce, Op* op);

// Checks (torch's rules and messages) and plans; `src` null means the value.
// The caller copies self into out afterwards (copy_self_into_out).
aotirt_status plan_scatter(const char* shim, const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index,
                           const Tensor* src, double value, Op op, bool include_self, ScatterPlan* plan);

// A boolean (or uint8) mask index stands for the coordinates of its
// nonzero elements, one int64 index per mask dimension, as torch expands
// it; those are computed on the host (CPU tensors only: on CUDA that count
// would be a host wait) into `mask_indices`, which must outlive the plan.
aotirt_status plan_index_put(const char* shim, const Tensor& out, const Tensor& self, const Tensor* const* indices,
                             uint32_t num_indices, const Tensor& values, bool accumulate, IndexPutPlan* plan,
                             std::vector<std::vector<int64_t>>* mask_indices);

// out <- self for the shims' out arguments, unless out is self (same memory
// and view); on CUDA queued on `stream` after both tensors' producers.
aotirt_status copy_self_into_out(Tensor& out, const Tensor& self, Stream* stream);

// The walks. CPU: errors for out-of-range indices, before writing anything.
aotirt_status scatter_cpu(const char* shim, const ScatterPlan& plan);
aotirt_status index_put_cpu(const char* shim, const IndexPutPlan& plan);
// CUDA: queued on `stream` (on the tensors' device, already ordered after
// their producers); no host wait.
aotirt_status scatter_cuda(const char* shim, const ScatterPlan& plan, Stream* stream);
aotirt_status index_put_cuda(const char* shim, const IndexPutPlan& plan, Stream* stream);

}  // namespace indexing
}  // namespace aotirt
