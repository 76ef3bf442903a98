// The C API of include/aotirt/aotirt.h: automatic CUDA graphs and
// device-resident loops. Argument checks only; the work is done in
// auto_graphs.cpp and loop.cpp.

#include <memory>
#include <new>

#include "runtime/auto_graphs.h"
#include "runtime/entry.h"
#include "runtime/errors.h"
#include "runtime/handle.h"
#include "runtime/loop.h"

using namespace aotirt;

extern "C" {

AOTIRT_API aotirt_status aotirt_handle_enable_graphs(aotirt_handle* h, size_t max_graphs, int static_outputs) {
  AOTIRT_ENTRY();
  if (!h) return fail(AOTIRT_ERROR_VALUE, "aotirt_handle_enable_graphs: the handle is NULL");
  if (max_graphs < 1)
    return fail(AOTIRT_ERROR_VALUE, "max_graphs is the number of graphs the cache keeps (1 or more), got 0");
  if (h->auto_graphs())
    return fail(AOTIRT_ERROR_VALUE, "graphs are already enabled for the handle of " + h->path());
  std::unique_ptr<AutoGraphs> graphs(new (std::nothrow) AutoGraphs(h, max_graphs, static_outputs != 0));
  if (!graphs) return fail(AOTIRT_ERROR_MEMORY, "out of host memory");
  h->set_auto_graphs(std::move(graphs));
  return AOTIRT_OK;
}

AOTIRT_API aotirt_status aotirt_handle_graph_stats(aotirt_handle* h, aotirt_graph_stats* out) {
  AOTIRT_ENTRY();
  if (!h || !out) return fail(AOTIRT_ERROR_VALUE, "aotirt_handle_graph_stats: the handle and `out` must not be NULL");
  *out = aotirt_graph_stats{};
  if (AutoGraphs* graphs = h->auto_graphs()) graphs->stats(out);
  return AOTIRT_OK;
}

AOTIRT_API const char* aotirt_handle_graphs_disabled_reason(aotirt_handle* h) {
  AOTIRT_ENTRY();
  if (AutoGraphs* graphs = h->auto_graphs()) return graphs->disabled_reason();
  return "graphs are off for this handle (open it with graphs=True, or call aotirt_handle_enable_graphs)";
}

AOTIRT_API int aotirt_handle_take_graph_warning(aotirt_handle* h, const char** reason) {
  AOTIRT_ENTRY();
  AutoGraphs* graphs = h->auto_graphs();
  return graphs && graphs->take_warning(reason) ? 1 : 0;
}

AOTIRT_API aotirt_status aotirt_handle_loop(aotirt_handle* h, aotirt_tensor* const* inputs, size_t n_in, size_t steps,
                                            const size_t* feedback_pairs, size_t n_feedback, const size_t* collect,
                                            size_t n_collect, aotirt_tensor** collected, aotirt_tensor** outputs,
                                            size_t n_out) {
  AOTIRT_ENTRY();
  if (!h) return fail(AOTIRT_ERROR_VALUE, "aotirt_handle_loop: the handle is NULL");
  LoopRequest request{inputs, n_in, steps, feedback_pairs, n_feedback, collect, n_collect, collected, outputs, n_out};
  return run_loop(*h, request);
}

}  // extern "C"
