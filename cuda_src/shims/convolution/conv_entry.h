// aten.convolution's arguments as both convolution shims receive them, and
// one definition of the shim's C signature (torch's, the same for the CPU
// and for CUDA), so that each device's file only implements the work.
#pragma once

#include <cstdint>

#include "aotirt/shim.h"
#include "runtime/tensor.h"
#include "shims/shim_helpers.h"

namespace aotirt {

struct ConvolutionArgs {
  const Tensor* input;
  const Tensor* weight;
  const Tensor* bias;  // nullptr: no bias
  const int64_t* stride;
  int64_t stride_len;
  const int64_t* padding;
  int64_t padding_len;
  const int64_t* dilation;
  int64_t dilation_len;
  bool transposed;
  const int64_t* output_padding;  // read by transposed convolutions only
  int64_t output_padding_len;
  int64_t groups;
};

}  // namespace aotirt

// Defines the extern "C" shim `name`: its arguments gathered into a
// ConvolutionArgs and handed to `impl(const ConvolutionArgs&, Tensor** ret)`
// inside aotirt::shim (which turns a failure into torch's error code).
#define AOTIRT_DEFINE_CONVOLUTION_SHIM(name, impl)                                                                     \
  extern "C" AOTITorchError name(AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias,              \
                                 const int64_t* stride, int64_t stride_len_, const int64_t* padding,                   \
                                 int64_t padding_len_, const int64_t* dilation, int64_t dilation_len_,                 \
                                 int32_t transposed, const int64_t* output_padding, int64_t output_padding_len_,       \
                                 int64_t groups, AtenTensorHandle* ret0) {                                             \
    return aotirt::shim(#name, [&] {                                                                                   \
      const aotirt::ConvolutionArgs args{input,   weight,       bias ? *bias : nullptr, stride, stride_len_,           \
                                         padding, padding_len_, dilation, dilation_len_, transposed != 0,              \
                                         output_padding, output_padding_len_, groups};                                 \
      return impl(args, ret0);                                                                                         \
    });                                                                                                                \
  }
