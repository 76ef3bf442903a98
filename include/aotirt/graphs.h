// The public C API's CUDA graphs: one run of a handle captured and replayed
// (aotirt_graph_*), the handle's automatic graphs, and device-resident loops
// (aotirt_handle_loop). Part of aotirt.h, which includes it at its end; its
// conventions (statuses, ownership, the one host wait) are aotirt.h's.
#pragma once

#include "aotirt/aotirt.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- CUDA graphs -------------------------------------------------------------
// One run of a CUDA handle, captured once and replayed with one launch.
//
// Capture: static inputs are made (contiguous, on the handle's device, at
// fixed addresses) and the example inputs copied into them, stream-ordered;
// `warmup` eager runs on them follow (lazy loading and first allocations
// happen there); then one run is captured on a private stream
// (cudaStreamCaptureModeThreadLocal): its allocations and frees become graph
// memory nodes, and its outputs are the graph's static outputs. The graph is
// instantiated with cudaGraphInstantiateFlagAutoFreeOnLaunch and launched
// once on the handle's stream, so the static outputs hold the results for the
// example inputs when the call returns, as a run's outputs would. No host wait.
// A run that cannot be captured (it fails, waits for the host, allocates with
// cudaMalloc, queries an event...) gives AOTIRT_ERROR_AOTI "... cannot be
// captured as a CUDA graph: <reason>", and the handle stays usable.
// `example_inputs` (CUDA tensors of the device or contiguous host tensors) are
// only read. The handle must stay alive (open or closed) while the graph
// lives; a closed handle's graph refuses to replay, as does one whose
// handle's weights were replaced after the capture.
AOTIRT_API aotirt_status aotirt_graph_capture(aotirt_handle* h, aotirt_tensor* const* example_inputs, size_t n,
                                              int warmup, aotirt_graph** out);
// The same, and the graph ends with device copies from outputs into static
// inputs: `feedback` holds `num_feedback` pairs (output index, input index),
// 2 * num_feedback values; each output must have its input's dtype and shape.
// A greedy decoder step feeds next_token back as token this way, so a replay
// with no inputs runs the next step.
AOTIRT_API aotirt_status aotirt_graph_capture_feedback(aotirt_handle* h, aotirt_tensor* const* example_inputs,
                                                       size_t n, int warmup, const size_t* feedback,
                                                       size_t num_feedback, aotirt_graph** out);
// Replays the graph on the handle's stream. `inputs` NULL: on the static
// inputs as they are. Else `n` (the number of inputs) tensors: one that is the
// static input itself (same data and view) is taken as it is; any other is
// checked (dtype and shape: AOTIRT_ERROR_VALUE naming the input) and copied
// into the static input on the stream (device to device, ordered after its
// producer's stream by an event, or host to device). Then one cudaGraphLaunch.
// `outputs`: NULL, or room for the outputs; it receives borrowed pointers to
// the static outputs, the same every replay, whose data each replay rewrites
// (the graph frees and allocates them again at each launch, at the same
// addresses: read or copy them, on the handle's stream or ordered before it,
// before the next replay). No host wait.
AOTIRT_API aotirt_status aotirt_graph_replay(aotirt_graph* g, aotirt_tensor* const* inputs, size_t n,
                                             aotirt_tensor** outputs);
AOTIRT_API size_t aotirt_graph_num_inputs(const aotirt_graph* g);
AOTIRT_API size_t aotirt_graph_num_outputs(const aotirt_graph* g);
// The static input or output `i`, borrowed (NULL once closed or out of range).
// aotirt_tensor_alias gives a handle of one's own, valid after the graph goes.
AOTIRT_API aotirt_tensor* aotirt_graph_input(const aotirt_graph* g, size_t i);
AOTIRT_API aotirt_tensor* aotirt_graph_output(const aotirt_graph* g, size_t i);
AOTIRT_API bool aotirt_graph_is_closed(const aotirt_graph* g);
// Destroys the executable graph (launches already queued still run; no wait)
// and drops the static tensors. The graph's memory is freed, stream-ordered,
// once no alias of a static output is left. A second close does nothing.
AOTIRT_API aotirt_status aotirt_graph_close(aotirt_graph* g);
// Closes (if needed) and frees the graph object. Before its handle's free.
AOTIRT_API void aotirt_graph_free(aotirt_graph* g);

// ---- automatic CUDA graphs and device-resident loops ---------------------------
// Automatic graphs: once enabled, aotirt_handle_run keys each call by its
// input signature (per input: dtype, sizes, strides, device; never the
// address). The first AOTIRT_AUTO_GRAPH_EAGER_RUNS calls of a signature run
// eagerly; the next one captures a graph of it (aotirt_graph_capture_feedback
// with one warm-up run on the static inputs) and later calls of it copy their
// inputs into the static inputs on the handle's stream (nothing for an input
// that is the static input itself) and replay. The outputs stay valid after
// later calls, as eager ones do: each graph has up to 2 captured instances
// (the second captured at a call that finds the first one's outputs still
// held), a call replays one whose outputs nobody holds, after the streams
// that used them, and returns aliases of its static outputs (no copy); when
// the caller keeps the outputs of the last 2 calls, one instance is replaced
// once and from then on kept free, and outputs are copied out of it on the
// stream when it is the only free one (output_copies). With
// `static_outputs` set: one instance, and the outputs are aliases of its
// static outputs, which the next call of that signature rewrites. At most
// `max_graphs` graphs (signatures) are
// kept (least recently used evicted); a graph captured before the weights
// were replaced is dropped (an invalidation) and captured again. A library
// that cannot be captured is remembered: the handle runs eagerly from then
// on (aotirt_handle_graphs_disabled_reason says why), and the call whose
// capture failed still returns its eager outputs. No host wait anywhere.
// Call once per handle, before its first run, from one thread; a second call
// is AOTIRT_ERROR_VALUE. A CPU handle accepts it and runs as before (its
// statistics say enabled 0, and the reason).
enum { AOTIRT_AUTO_GRAPH_EAGER_RUNS = 2 };
AOTIRT_API aotirt_status aotirt_handle_enable_graphs(aotirt_handle* h, size_t max_graphs, int static_outputs);
typedef struct aotirt_graph_stats {
  int enabled;             // graphs are being captured and replayed (0: off, a CPU handle, or disabled)
  size_t graphs;           // graphs (signatures) in the cache now
  uint64_t hits;           // calls (runs and loops) served by a cached graph
  uint64_t captures;       // instances captured
  uint64_t evictions;      // graphs dropped to stay within max_graphs
  uint64_t invalidations;  // graphs dropped because the weights were replaced
  uint64_t eager_runs;     // runs (and loop steps) that ran eagerly while graphs were enabled
  uint64_t memory_bytes;   // device bytes the cached graphs hold (every instance): static inputs +
                           // graph allocations alive between launches (the static outputs)
  uint64_t output_copies;  // calls whose outputs were copied out of the static outputs (copy mode,
                           // when the caller kept the outputs of the last calls: see instances)
  size_t instances;        // captured instances of the cached graphs (copy mode: up to 2 per graph)
} aotirt_graph_stats;
// All zero (enabled 0) for a handle whose graphs were never enabled.
AOTIRT_API aotirt_status aotirt_handle_graph_stats(aotirt_handle* h, aotirt_graph_stats* out);
// Why graphs do not run: NULL while they do; else the reason (never enabled,
// a CPU handle, or the capture failure's message), valid for the handle's life.
AOTIRT_API const char* aotirt_handle_graphs_disabled_reason(aotirt_handle* h);
// 1 exactly once after a capture failed and the handle went eager, with
// *reason (may be NULL) set to the failure's message; else 0. For a caller
// that warns its user once (Python's RuntimeWarning).
AOTIRT_API int aotirt_handle_take_graph_warning(aotirt_handle* h, const char** reason);
// Runs `steps` (1 or more) steps of the model without a host wait: step 0 on
// `inputs`; each later step on the same inputs but for those fed back:
// `feedback_pairs` holds `n_feedback` pairs (output index, input index)
// (2 * n_feedback values), and that output of one step is that input of the
// next (it must have the input's dtype and shape: AOTIRT_ERROR_VALUE naming
// both). For each of the `n_collect` output indices in `collect`,
// collected[k] receives a new tensor of shape (steps, *that output's shape)
// on the handle's device holding every step's output in step order (an
// output whose shape changes between steps is AOTIRT_ERROR_VALUE). `outputs`
// (NULL, or room for n_out == the number of outputs) receives the last
// step's outputs, new tensors valid after later calls (aliases of static
// outputs with static_outputs set). With graphs enabled on a CUDA handle,
// the loop captures a graph with the feedback pairs (once per input
// signature and pairs, kept in the same cache) and each step is one replay
// plus the collect copies (device to device, on the handle's stream); else
// each step is an eager run. Works for CPU handles too. No host wait.
AOTIRT_API aotirt_status aotirt_handle_loop(aotirt_handle* h, aotirt_tensor* const* inputs, size_t n_in, size_t steps,
                                            const size_t* feedback_pairs, size_t n_feedback, const size_t* collect,
                                            size_t n_collect, aotirt_tensor** collected, aotirt_tensor** outputs,
                                            size_t n_out);

#ifdef __cplusplus
}  // extern "C"
#endif
