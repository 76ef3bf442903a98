// The tuning's alternatives to cuDNN's engines for a convolution
// (AOTIRT_CUDNN_TUNE; cudnn_plan.h's Alternative): ways to run the same
// convolution that a tuned key measures beside the engines and records
// under their names where they win. Untuned runs never use them. One per
// key, by the convolution's shape and layout:
//  - cublas_gemm: a 1x1 channels-last convolution of stride 1 is one
//    matrix product as it lies in memory (conv_gemm.h);
//  - cublas_im2col: a patch embedding (kernel = stride, unpadded: ViT's
//    stem), a 1-D convolution (Whisper's front end), a stem of few input
//    channels (an RGB image) or a channels-last convolution whose window
//    matrix is small (resnet's 3x3 layers at a small batch), as im2col and
//    one matrix product: its windows gathered in one pass (conv_view.h's
//    im2col_of and im2col_suits, conv_windows.h);
//  - cudnn_channels_last: one whose operands are all contiguous, on
//    channels-last copies of them, its result copied back. It was built for
//    Whisper's front end (Inductor, kernel/conv.py, leaves a CUDA 1-D
//    convolution contiguous), where it lost on an H100 (40 and 55 us
//    against cuDNN's 22 and 29): 1-D convolutions now offer im2col, and
//    contiguous 2-D and 3-D ones this.
// Which one wins, if any, depends on the shape: measured, never assumed.
#pragma once

#if defined(AOTIRT_HAVE_CUDNN)

#include <cstdint>
#include <unordered_map>

#include "aotirt/aotirt.h"
#include "runtime/stream.h"
#include "shims/convolution/conv_spec.h"
#include "shims/libs/cudnn_plan.h"

namespace aotirt {
namespace conv_cuda {

// Builds the cuDNN graph of `s` into `plan` (conv_cudnn.cpp): its engines
// measured when `tuning` is given, else cuDNN's heuristics' choice.
void build(const Spec& s, cudnn::Context& ctx, const cudnn::Tuning* tuning, cudnn::GraphPlan* plan);

// The alternative a tuned plan of `s` offers beside cuDNN's engines: its
// name, or "" for none. Decided once, when the plan is built (the plan
// keeps the name: GraphPlan::alternative).
const char* offered_alternative(const Spec& s);

// Runs the tuned `plan` of `s` for one call (cudnn::execute, measuring
// while the tuning measures), on `ops` (whose data are `pointers`' values),
// with the alternative the plan names.
aotirt_status execute_offering(const cudnn::GraphPlan& plan, cudnn::Context& ctx, const Spec& s, const Operands& ops,
                               std::unordered_map<int64_t, void*>& pointers, const StreamRef& stream);

}  // namespace conv_cuda
}  // namespace aotirt

#endif  // AOTIRT_HAVE_CUDNN
