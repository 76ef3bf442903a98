// Scaled dot-product attention on cuDNN's fused attention (cudnn-frontend's
// graph.sdpa, inference: no dropout, statistics only when the log-sum-exp is
// asked for), for float16 and bfloat16: what torch's cuDNN attention runs.
// The dispatch (attention.cpp) asks cudnn_takes first; the straightforward
// kernel (run_cuda) stays the fallback for what cuDNN does not take.
#pragma once

#include "shims/attention/sdpa.h"
#include "runtime/stream.h"

namespace aotirt {
namespace attention {

// Whether the fused kernels can take `p`: float16 or bfloat16; head sizes
// multiples of 8 up to 256; rows of q, k, v and out contiguous, their other
// strides multiples of 8 elements and the data 16-byte aligned; no bias, or
// an additive one of p's dtype (bool masks stay with the kernel), broadcast
// in any dimension but the keys'; causal masks aligned top-left, or
// bottom-right where every row sees a key (no bias then); a float32
// log-sum-exp laid out [B, H, L] densely, or none. A pure check: it reads
// `p` alone and loads nothing. Always false in a build without cuDNN.
bool cudnn_takes(const Problem& p);

// Queued on `stream` (of the current device, ordered after the inputs'
// producers); never waits. A problem whose graph cuDNN declines, or a
// process where cuDNN cannot be loaded, runs on the kernel instead (said
// once in the AOTIRT_LOG=debug log). Plans are built on the first call with
// a key and cached in the thread's cuDNN context; building one while
// `stream` is captured into a CUDA graph fails.
aotirt_status run_cudnn(const Problem& p, Stream* stream);

}  // namespace attention
}  // namespace aotirt
