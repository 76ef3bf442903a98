// A CUDA convolution as cuDNN sees it (its operands' views, what a plan
// depends on), shared by the shim (conv_cudnn.cpp) and the tuning's
// alternatives to cuDNN's engines (conv_alternatives.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "aotirt/aotirt.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"
#include "shims/convolution/conv_layout.h"

namespace aotirt {
namespace conv_cuda {

constexpr const char* kName = "aoti_torch_cuda_convolution";

// The operands' uids in every convolution graph.
enum Uid : int64_t { kX = 1, kW = 2, kY = 3 };

// An operand as cuDNN sees it: 4- or 5-D (a 1-D convolution's [N, C, L]
// becomes [N, C, 1, L], as torch's unsqueeze(2) makes it).
struct View {
  int64_t ndim = 0;
  int64_t sizes[5] = {};
  int64_t strides[5] = {};
};

View view_of(const Tensor& t);

// The dense strides of `format` for v's sizes, and whether v already has them
// (a dimension of size 1 may have any stride: it addresses the same memory).
bool packed_as(const View& v, conv_layout::Format format, int64_t* strides);

// cudnn-frontend tells cuDNN every operand is 16-byte aligned (its
// Tensor_attributes default, which engines are chosen for; 1.32 refuses to
// execute with a pointer that is not, older ones hand it to such an
// engine). Pool memory always is; a view at an odd offset is copied (torch
// instead keys its plans on each pointer's alignment).
inline bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// A new tensor of t's sizes and dtype with `strides` (of a view: 4-D for a
// 3-D t, whose unit dimension 2 is dropped), dense, ordered on `stream`.
aotirt_status scratch(const Tensor& t, const int64_t* strides, const StreamRef& stream, Tensor* out);

// Everything a plan depends on, as cuDNN sees it.
struct Spec {
  bool transposed = false;
  int32_t dtype = 6;
  bool tf32 = false;
  View x, w, y;  // input, weight, output (the data gradient's dy, w, dx when transposed)
  int64_t spatial = 0;  // of the views: 2 or 3
  int64_t stride[3] = {}, padding[3] = {}, dilation[3] = {};
};

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
