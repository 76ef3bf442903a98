// The scatter and index_put shims (torch's shim.h and generated
// c_shim_cpu.h / c_shim_cuda.h): every name is a door to one implementation
// (plan, copy self into out, walk on the tensors' device). The device-named
// ones (aoti_torch_cpu_*, aoti_torch_cuda_*) are what Inductor's ScatterFallback
// emits; the others take the device of their tensors.

#include <string>
#include <vector>

#include "aotirt/shim.h"
#include "runtime/errors.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"
#include "shims/indexing/indexing.h"
#include "shims/shim_helpers.h"

namespace aotirt {
namespace indexing {
namespace {

constexpr int32_t kAnyDevice = -1;

aotirt_status check_device(const char* shim, const Tensor& self, int32_t device_type) {
  if (device_type == kAnyDevice || self.storage->device_type == device_type) return AOTIRT_OK;
  return fail(AOTIRT_ERROR_VALUE, std::string(shim) + ": self must be a " +
                                      (device_type == AOTIRT_DEVICE_CUDA ? "CUDA" : "CPU") + " tensor");
}

// The CUDA stream of a call, ordered after the producers of every tensor it
// reads or writes.
aotirt_status prepare_stream(const Tensor* const* tensors, size_t n, int device, StreamRef* stream) {
  AOTIRT_TRY(check_device_usable(device));
  AOTIRT_TRY(stream_for_device(device, stream));
  for (size_t i = 0; i < n; ++i)
    if (tensors[i]) AOTIRT_TRY(use_on(*tensors[i], stream->get()));
  return AOTIRT_OK;
}

aotirt_status scatter(const char* shim, int32_t device_type, Tensor* out, const Tensor* self, int64_t dim,
                      const Tensor* index, const Tensor* src, double value, Op op, bool include_self) {
  if (!out || !self || !index) return null_argument(shim);
  AOTIRT_TRY(check_device(shim, *self, device_type));
  ScatterPlan plan;
  AOTIRT_TRY(plan_scatter(shim, *out, *self, dim, *index, src, value, op, include_self, &plan));
  if (self->storage->device_type == AOTIRT_DEVICE_CPU) {
    AOTIRT_TRY(copy_self_into_out(*out, *self, nullptr));
    return scatter_cpu(shim, plan);
  }
  StreamRef stream;
  const Tensor* used[] = {self, index, src, out};
  AOTIRT_TRY(prepare_stream(used, 4, self->storage->device_index, &stream));
  AOTIRT_TRY(copy_self_into_out(*out, *self, stream.get()));
  AOTIRT_TRY(scatter_cuda(shim, plan, stream.get()));
  out->stream = std::move(stream);
  return AOTIRT_OK;
}

aotirt_status scatter_reduce(const char* shim, int32_t device_type, Tensor* out, const Tensor* self, int64_t dim,
                             const Tensor* index, const Tensor* src, const char* reduce, int32_t include_self) {
  if (!src) return null_argument(shim);
  Op op = Op::Add;
  AOTIRT_TRY(parse_reduce(shim, reduce, &op));
  return scatter(shim, device_type, out, self, dim, index, src, 0.0, op, include_self != 0);
}

aotirt_status index_put(const char* shim, int32_t device_type, Tensor* out, const Tensor* self,
                        const std::vector<const Tensor*>& indices, const Tensor* values, bool accumulate) {
  if (!out || !self || !values) return null_argument(shim);
  AOTIRT_TRY(check_device(shim, *self, device_type));
  IndexPutPlan plan;
  std::vector<std::vector<int64_t>> mask_indices;  // what the plan's mask entries point into
  AOTIRT_TRY(plan_index_put(shim, *out, *self, indices.data(), static_cast<uint32_t>(indices.size()), *values,
                            accumulate, &plan, &mask_indices));
  if (self->storage->device_type == AOTIRT_DEVICE_CPU) {
    AOTIRT_TRY(copy_self_into_out(*out, *self, nullptr));
    return index_put_cpu(shim, plan);
  }
  StreamRef stream;
  std::vector<const Tensor*> used(indices);
  used.push_back(self);
  used.push_back(values);
  used.push_back(out);
  AOTIRT_TRY(prepare_stream(used.data(), used.size(), self->storage->device_index, &stream));
  AOTIRT_TRY(copy_self_into_out(*out, *self, stream.get()));
  AOTIRT_TRY(index_put_cuda(shim, plan, stream.get()));
  out->stream = std::move(stream);
  return AOTIRT_OK;
}

// torch's clone(memory_format=preserve) layout: self's strides when they are
// non-overlapping and dense, else contiguous (null).
const int64_t* preserved_strides(const Tensor& self) {
  int order[kMaxDims];
  int n = 0;
  for (int d = 0; d < self.ndim; ++d)
    if (self.sizes[d] != 1) order[n++] = d;
  for (int i = 1; i < n; ++i)  // by stride, smallest first
    for (int j = i; j > 0 && self.strides[order[j - 1]] > self.strides[order[j]]; --j) {
      const int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  int64_t expected = 1;
  for (int i = 0; i < n; ++i) {
    if (self.sizes[order[i]] == 0 || self.strides[order[i]] != expected) return nullptr;
    expected *= self.sizes[order[i]];
  }
  return self.strides;
}

// aten.index_put (functional): a new tensor laid out as torch's clone of self.
aotirt_status index_put_new(const char* shim, int32_t device_type, const Tensor* self,
                            const AtenTensorHandle* const* indices, int64_t num_indices, const Tensor* values,
                            bool accumulate, Tensor** ret) {
  if (!self || !ret || (num_indices > 0 && !indices)) return null_argument(shim);
  if (num_indices < 0) return fail(AOTIRT_ERROR_VALUE, std::string(shim) + ": negative number of indices");
  AOTIRT_TRY(check_device(shim, *self, device_type));
  std::vector<const Tensor*> list;
  for (int64_t i = 0; i < num_indices; ++i) list.push_back(indices[i] ? *indices[i] : nullptr);
  Tensor* made = nullptr;
  AOTIRT_TRY(new_tensor(self->ndim, self->sizes, preserved_strides(*self), self->dtype, self->storage->device_type,
                        self->storage->device_index, &made));
  OwnedTensor out(made);
  AOTIRT_TRY(index_put(shim, device_type, out.get(), self, list, values, accumulate));
  *ret = out.release();
  return AOTIRT_OK;
}

std::vector<const Tensor*> index_list(const AtenTensorHandle* indices, uint32_t n) {
  std::vector<const Tensor*> list;
  for (uint32_t i = 0; indices && i < n; ++i) list.push_back(indices[i]);
  return list;
}

}  // namespace
}  // namespace indexing
}  // namespace aotirt

using aotirt::indexing::Op;
using aotirt::indexing::kAnyDevice;

extern "C" {

AOTITorchError aoti_torch_scatter_out(AtenTensorHandle out, AtenTensorHandle self, int64_t dim,
                                      AtenTensorHandle index, AtenTensorHandle src) {
  constexpr const char* name = "aoti_torch_scatter_out";
  return aotirt::shim(name, [&] {
    if (!src) return aotirt::null_argument(name);
    return aotirt::indexing::scatter(name, kAnyDevice, out, self, dim, index, src, 0.0, Op::Assign, true);
  });
}

AOTITorchError aoti_torch_scatter_reduce_out(AtenTensorHandle out, AtenTensorHandle self, int64_t dim,
                                             AtenTensorHandle index, AtenTensorHandle src, const char* reduce,
                                             int32_t include_self) {
  constexpr const char* name = "aoti_torch_scatter_reduce_out";
  return aotirt::shim(name, [&] {
    return aotirt::indexing::scatter_reduce(name, kAnyDevice, out, self, dim, index, src, reduce, include_self);
  });
}

AOTITorchError aoti_torch_index_put_out(AtenTensorHandle out, AtenTensorHandle self, const AtenTensorHandle* indices,
                                        const uint32_t num_indices, const AtenTensorHandle values, bool accumulate) {
  constexpr const char* name = "aoti_torch_index_put_out";
  return aotirt::shim(name, [&] {
    if (num_indices > 0 && !indices) return aotirt::null_argument(name);
    return aotirt::indexing::index_put(name, kAnyDevice, out, self, aotirt::indexing::index_list(indices, num_indices),
                                       values, accumulate);
  });
}

}  // extern "C"

// The device-named doors (c_shim_cpu.h, c_shim_cuda.h), one set per device,
// each named in full (the name errors carry).
#define AOTIRT_SCATTER_SHIMS(scatter_src_out, scatter_value_out, DEVICE_TYPE)                                          \
  AOTITorchError scatter_src_out(AtenTensorHandle out, AtenTensorHandle self, int64_t dim, AtenTensorHandle index,     \
                                 AtenTensorHandle src) {                                                               \
    const char* name = #scatter_src_out;                                                                               \
    return aotirt::shim(name, [&] {                                                                                    \
      if (!src) return aotirt::null_argument(name);                                                                    \
      return aotirt::indexing::scatter(name, DEVICE_TYPE, out, self, dim, index, src, 0.0, Op::Assign, true);          \
    });                                                                                                                \
  }                                                                                                                    \
  AOTITorchError scatter_value_out(AtenTensorHandle out, AtenTensorHandle self, int64_t dim, AtenTensorHandle index,   \
                                   double value) {                                                                     \
    const char* name = #scatter_value_out;                                                                             \
    return aotirt::shim(name, [&] {                                                                                    \
      return aotirt::indexing::scatter(name, DEVICE_TYPE, out, self, dim, index, nullptr, value, Op::Assign, true);    \
    });                                                                                                                \
  }

#define AOTIRT_REDUCE_AND_PUT_SHIMS(scatter_reduce_two_out, index_put, DEVICE_TYPE)                                    \
  AOTITorchError scatter_reduce_two_out(AtenTensorHandle out, AtenTensorHandle self, int64_t dim,                      \
                                        AtenTensorHandle index, AtenTensorHandle src, const char* reduce,              \
                                        int32_t include_self) {                                                        \
    const char* name = #scatter_reduce_two_out;                                                                        \
    return aotirt::shim(name, [&] {                                                                                    \
      return aotirt::indexing::scatter_reduce(name, DEVICE_TYPE, out, self, dim, index, src, reduce, include_self);    \
    });                                                                                                                \
  }                                                                                                                    \
  AOTITorchError index_put(AtenTensorHandle self, const AtenTensorHandle** indices, int64_t indices_len,               \
                           AtenTensorHandle values, int32_t accumulate, AtenTensorHandle* ret0) {                      \
    const char* name = #index_put;                                                                                     \
    return aotirt::shim(name, [&] {                                                                                    \
      return aotirt::indexing::index_put_new(name, DEVICE_TYPE, self, indices, indices_len, values, accumulate != 0,   \
                                             ret0);                                                                    \
    });                                                                                                                \
  }

extern "C" {

AOTIRT_SCATTER_SHIMS(aoti_torch_cpu_scatter_src_out, aoti_torch_cpu_scatter_value_out, AOTIRT_DEVICE_CPU)
AOTIRT_SCATTER_SHIMS(aoti_torch_cuda_scatter_src_out, aoti_torch_cuda_scatter_value_out, AOTIRT_DEVICE_CUDA)
AOTIRT_REDUCE_AND_PUT_SHIMS(aoti_torch_cpu_scatter_reduce_two_out, aoti_torch_cpu_index_put, AOTIRT_DEVICE_CPU)
AOTIRT_REDUCE_AND_PUT_SHIMS(aoti_torch_cuda_scatter_reduce_two_out, aoti_torch_cuda_index_put, AOTIRT_DEVICE_CUDA)

}  // extern "C"
