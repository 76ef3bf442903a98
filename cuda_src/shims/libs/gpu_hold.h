// A short hold of a stream on the GPU: one thread that spins for a given
// time. The work queued behind it waits for it, so launches the host queues
// while it spins start back to back once it ends, and CUDA events recorded
// around them time the GPU's work alone, not the gaps of the host's
// launches (cuDNN tuning's measurement, cudnn_graph.h, is its user). It
// waits on nothing but the clock, so it cannot deadlock with other work
// (such as a module load that needs the device idle).
#pragma once

#include <cuda_runtime_api.h>

#include "aotirt/aotirt.h"

namespace aotirt {

// Queues a hold of about `microseconds` (at most 100 ms; nothing for 0,
// less or NaN) on `stream`. Not for a stream being captured: the hold would
// become part of the graph.
aotirt_status gpu_hold(cudaStream_t stream, double microseconds);

}  // namespace aotirt
