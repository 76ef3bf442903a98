// What the cuDNN shims (convolution, attention) share on top of
// cudnn-frontend's graph API: a plan cached per key in the thread's cuDNN
// context, built on the first call with that key (never while the stream is
// being captured), and its execution with a workspace from the
// stream-ordered pool. Only for builds with cuDNN's headers
// (AOTIRT_HAVE_CUDNN).
#pragma once

#if defined(AOTIRT_HAVE_CUDNN)

#include <cudnn_frontend.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/errors.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"
#include "shims/libs/cudnn.h"

#if CUDNN_FRONTEND_VERSION < 11300
#error "aotirt needs cudnn-frontend 1.13 or newer (pip install -U nvidia-cudnn-frontend)"
#endif

namespace aotirt {
namespace cudnn {

namespace fe = cudnn_frontend;

// A built graph with its plan, or why cuDNN declined the key (kept: a call
// cuDNN cannot run is then answered at once, during a capture too).
struct GraphPlan : Cached {
  std::unique_ptr<fe::graph::Graph> graph;
  int64_t workspace = 0;
  std::string engine;    // the plan's engine, for the debug log
  std::string declined;  // empty when built
};

// A new graph of `io` tensors with float intermediates and math, for the
// context's device. Its SM version is given, so that the frontend does not
// ask the device itself (through a CUDA runtime it would open on its own).
inline std::unique_ptr<fe::graph::Graph> new_graph(const Context& ctx, fe::DataType_t io) {
  auto graph = std::make_unique<fe::graph::Graph>();
  graph->set_io_data_type(io)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
#if CUDNN_FRONTEND_VERSION >= 11900
  graph->set_sm_version(ctx.sm_version);
#else
  (void)ctx;
#endif
  return graph;
}

// Validates `graph` (its tensors and nodes set), lowers it to cuDNN's
// backend, asks cuDNN's heuristics (mode A, then the fallback list) for
// engines, drops those with a `deselected` numerical note, and builds the
// first supported one. Any step cuDNN refuses becomes plan->declined.
inline void finalize(std::unique_ptr<fe::graph::Graph> graph, Handle handle,
                     const std::vector<fe::NumericalNote_t>& deselected, GraphPlan* plan) {
  auto step = [&](const char* what, fe::error_t status) {
    if (status.is_good()) return true;
    plan->declined = std::string(what) + ": " + status.get_message();
    return false;
  };
  if (!step("validate", graph->validate())) return;
  if (!step("build_operation_graph", graph->build_operation_graph(handle))) return;
  if (!step("create_execution_plans", graph->create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK})))
    return;
  if (!deselected.empty()) graph->deselect_numeric_notes(deselected);
  if (!step("check_support", graph->check_support(handle))) return;
  if (!step("build_plans", graph->build_plans(handle, fe::BuildPlanPolicy_t::HEURISTICS_CHOICE))) return;
  int64_t workspace = 0;
  if (!step("get_workspace_size", graph->get_workspace_size(workspace))) return;
  if (graph->get_plan_name(plan->engine).is_bad()) plan->engine = "?";
  plan->workspace = workspace;
  plan->graph = std::move(graph);
}

// The context's plan for `key`; the first time, `make(GraphPlan*)` builds
// it, unless `stream` is being captured. `what()` describes the call, for
// messages (made only when one is written).
template <typename Describe, typename Make>
aotirt_status plan_for(const char* who, Context& ctx, cudaStream_t stream, const std::string& key,
                       const Describe& what, const Make& make, const GraphPlan** out) {
  auto found = ctx.plans.find(key);
  if (found == ctx.plans.end()) {
    AOTIRT_TRY(refuse_while_capturing(who, stream, "build a cuDNN plan for a " + what()));
    std::unique_ptr<GraphPlan> plan(new GraphPlan());
    make(plan.get());
    if (plan->declined.empty())
      debug_log(std::string(who) + ": cuDNN plan " + plan->engine + " (workspace " +
                std::to_string(plan->workspace) + " bytes) for a " + what());
    else
      debug_log(std::string(who) + ": cuDNN declined a " + what() + " (" + plan->declined + ")");
    found = ctx.plans.emplace(key, std::move(plan)).first;
  }
  *out = static_cast<const GraphPlan*>(found->second.get());
  return AOTIRT_OK;
}

// Queues a built plan on `stream` (the context's handle is set to it) with
// the operands' pointers by uid, and a workspace from the pool.
template <typename Describe>
aotirt_status execute(const char* who, const GraphPlan& plan, Context& ctx,
                      std::unordered_map<int64_t, void*>& pointers, const StreamRef& stream, const Describe& what) {
  StorageRef workspace;
  if (plan.workspace > 0)
    AOTIRT_TRY(allocate_storage(static_cast<size_t>(plan.workspace), AOTIRT_DEVICE_CUDA, ctx.device, stream,
                                &workspace));
  fe::error_t status = plan.graph->execute(ctx.handle, pointers, workspace ? workspace->data : nullptr);
  if (status.is_bad())
    return fail(AOTIRT_ERROR_AOTI,
                std::string(who) + ": cuDNN failed to execute its plan for a " + what() + ": " + status.get_message());
  return AOTIRT_OK;
}

}  // namespace cudnn
}  // namespace aotirt

#endif  // AOTIRT_HAVE_CUDNN
