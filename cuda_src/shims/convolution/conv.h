// aten.convolution (transposed=False) as the convolution shims take it: the
// checks and the geometry every device's implementation shares. describe()
// is defined beside the CPU loops (conv_cpu.cpp).
#pragma once

#include <cstdint>

#include "aotirt/aotirt.h"
#include "runtime/tensor.h"

namespace aotirt {
namespace conv {

// One spatial geometry, padded to 3 dimensions (depth, height, width) with
// size-1 dimensions in front for 1- and 2-D convolutions. The strides are
// the operands' along those dimensions (0 for the padding ones); out_stride
// is set once the output is laid out (set_output_strides).
struct Geometry {
  int64_t in[3], kernel[3], out[3], stride[3], padding[3], dilation[3];
  int64_t in_stride[3], weight_stride[3], out_stride[3];
};

// A checked call: its operands (`bias` may be null), groups, the rank of
// input, weight and output (3, 4 or 5) and the output's sizes.
struct Problem {
  const Tensor* input = nullptr;
  const Tensor* weight = nullptr;
  const Tensor* bias = nullptr;
  int64_t groups = 1;
  int64_t ndim = 0;
  int64_t out_sizes[5] = {};
  Geometry g{};
};

// Checks a call of the shim `name`, whose tensors must all be on
// `device_type` (and on the input's CUDA device), and describes it in `p`.
aotirt_status describe(const char* name, int32_t device_type, const Tensor* input, const Tensor* weight,
                       const Tensor* bias, const int64_t* stride, int64_t stride_len, const int64_t* padding,
                       int64_t padding_len, const int64_t* dilation, int64_t dilation_len, int32_t transposed,
                       int64_t groups, Problem* p);

// Sets p->g.out_stride from the strides the output was laid out with.
inline void set_output_strides(const int64_t* out_strides, Problem* p) {
  const int64_t spatial = p->ndim - 2;
  for (int64_t i = 0; i < 3; ++i) {
    const int64_t d = i - (3 - spatial);
    p->g.out_stride[i] = d >= 0 ? out_strides[2 + d] : 0;
  }
}

}  // namespace conv
}  // namespace aotirt
