// Device-resident loops (aotirt_handle_loop): N steps of a model, outputs fed
// back as the next step's inputs and collected into stacked tensors, all
// queued on the handle's stream without a host wait. Eagerly (any handle) or
// as one replay per step of a graph captured with the feedback pairs
// (auto_graphs.cpp finds or captures that graph).
#pragma once

#include <cstddef>

#include "aotirt/aotirt.h"
#include "runtime/graph.h"
#include "runtime/handle.h"
#include "runtime/tensor.h"

namespace aotirt {

// The arguments of aotirt_handle_loop.
struct LoopRequest {
  Tensor* const* inputs;
  size_t num_inputs;
  size_t steps;
  const size_t* feedback;  // 2 * num_feedback values: (output, input) pairs
  size_t num_feedback;
  const size_t* collect;
  size_t num_collect;
  Tensor** collected;      // num_collect slots
  Tensor** outputs;        // num_outputs slots, or NULL
  size_t num_outputs;
};

// Everything that can be checked before any work: counts, indices, NULLs.
aotirt_status check_loop_request(const aotirt_handle& handle, const LoopRequest& request);

// The loop, eagerly or on the handle's automatic graphs.
aotirt_status run_loop(aotirt_handle& handle, const LoopRequest& request);

// Each step an eager run of the handle.
aotirt_status run_loop_eagerly(aotirt_handle& handle, const LoopRequest& request);

// Each step one replay of `graph`, captured with the request's feedback
// pairs. `first_step_done`: the capture's own launch was step 0 (on the
// request's inputs). Outputs copied out, or aliases with `static_outputs`.
aotirt_status run_loop_on_graph(aotirt_graph& graph, Stream* stream, const LoopRequest& request,
                                bool first_step_done, bool static_outputs);

}  // namespace aotirt
