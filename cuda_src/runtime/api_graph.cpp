// The C API of include/aotirt/aotirt.h: CUDA graphs. Argument checks only;
// the work is done in graph.cpp.

#include "runtime/entry.h"
#include "runtime/errors.h"
#include "runtime/graph.h"
#include "runtime/tensor.h"

using namespace aotirt;

extern "C" {

AOTIRT_API aotirt_status aotirt_graph_capture(aotirt_handle* h, aotirt_tensor* const* example_inputs, size_t n,
                                              int warmup, aotirt_graph** out) {
  AOTIRT_ENTRY();
  return aotirt_graph_capture_feedback(h, example_inputs, n, warmup, nullptr, 0, out);
}

AOTIRT_API aotirt_status aotirt_graph_capture_feedback(aotirt_handle* h, aotirt_tensor* const* example_inputs,
                                                       size_t n, int warmup, const size_t* feedback,
                                                       size_t num_feedback, aotirt_graph** out) {
  AOTIRT_ENTRY();
  if (!h || !out) return fail(AOTIRT_ERROR_VALUE, "aotirt_graph_capture: the handle and `out` must not be NULL");
  return aotirt_graph::capture(h, example_inputs, n, warmup, feedback, num_feedback, out);
}

AOTIRT_API aotirt_status aotirt_graph_replay(aotirt_graph* g, aotirt_tensor* const* inputs, size_t n,
                                             aotirt_tensor** outputs) {
  AOTIRT_ENTRY();
  return g->replay(inputs, n, outputs);
}

AOTIRT_API size_t aotirt_graph_num_inputs(const aotirt_graph* g) { AOTIRT_ENTRY(); return g->num_inputs(); }
AOTIRT_API size_t aotirt_graph_num_outputs(const aotirt_graph* g) { AOTIRT_ENTRY(); return g->num_outputs(); }
AOTIRT_API aotirt_tensor* aotirt_graph_input(const aotirt_graph* g, size_t i) { AOTIRT_ENTRY(); return g->input(i); }
AOTIRT_API aotirt_tensor* aotirt_graph_output(const aotirt_graph* g, size_t i) { AOTIRT_ENTRY(); return g->output(i); }
AOTIRT_API bool aotirt_graph_is_closed(const aotirt_graph* g) { AOTIRT_ENTRY(); return g->closed(); }
AOTIRT_API aotirt_status aotirt_graph_close(aotirt_graph* g) { AOTIRT_ENTRY(); return g->close(); }
AOTIRT_API void aotirt_graph_free(aotirt_graph* g) { AOTIRT_ENTRY(); delete g; }

}  // extern "C"
