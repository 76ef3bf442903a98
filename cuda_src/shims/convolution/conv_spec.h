// What the convolution shim (conv_cudnn.cpp) and the tuning's alternatives
// to cuDNN's engines (conv_alternatives.cpp) share beyond conv_view.h's
// arithmetic: operands' views of tensors, scratch tensors, plan keys and
// descriptions.
#pragma once

#include <cstdint>
#include <string>

#include "aotirt/aotirt.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"
#include "shims/convolution/conv_layout.h"
#include "shims/convolution/conv_view.h"

namespace aotirt {
namespace conv_cuda {

constexpr const char* kName = "aoti_torch_cuda_convolution";

// The operands' uids in every convolution graph.
enum Uid : int64_t { kX = 1, kW = 2, kY = 3 };

View view_of(const Tensor& t);

// cudnn-frontend tells cuDNN every operand is 16-byte aligned (its
// Tensor_attributes default, which engines are chosen for; 1.32 refuses to
// execute with a pointer that is not, older ones hand it to such an
// engine). Pool memory always is; a view at an odd offset is copied (torch
// instead keys its plans on each pointer's alignment).
inline bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// A new dense tensor of `ndim` `sizes` and `dtype` on CUDA `device`, laid
// out as `strides` say (contiguous for nullptr), ordered on `stream`.
aotirt_status new_scratch(int64_t ndim, const int64_t* sizes, const int64_t* strides, int32_t dtype, int device,
                          const StreamRef& stream, Tensor* out);

// new_scratch of t's sizes and dtype with `strides` (of a view: 4-D for a
// 3-D t, whose unit dimension 2 is dropped).
aotirt_status scratch(const Tensor& t, const int64_t* strides, const StreamRef& stream, Tensor* out);

// For messages and the debug log.
std::string list(int64_t n, const int64_t* v);
std::string describe(const Spec& s);

// The plan cache's key of `s`.
std::string key_of(const Spec& s);

// The product of a convolution that is one (conv_layout::as_matmul); false
// for one that is not.
bool matmul_of(const Spec& s, conv_layout::MatmulShape* product);

// One call's operands as cuDNN reads and writes them: tensors whose data
// are the pointers the plan runs on (the call's own, or copies in the
// backend's format).
struct Operands {
  const Tensor* x;
  const Tensor* w;
  const Tensor* y;
};

}  // namespace conv_cuda
}  // namespace aotirt
