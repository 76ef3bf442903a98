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
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/errors.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"
#include "runtime/unfinished_measurement.h"
#include "shims/libs/cudnn.h"
#include "shims/libs/cudnn_configs.h"
#include "shims/libs/cudnn_measure.h"
#include "shims/libs/cudnn_plan.h"
#include "shims/libs/cudnn_tuning.h"

namespace aotirt {
namespace cudnn {

namespace fe = cudnn_frontend;

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
//
// With `tuning` (tuning on, for a shim that tunes): a choice recorded for
// the key in the choices' file is built alone and runs from the start.
// Without one, every engine is built (in the wide mode, with the
// configurations one knob away from the list's), the heuristics' choice
// runs, and the others are listed in plan->timings for the first call to
// measure (measure_and_choose).
inline void finalize(std::unique_ptr<fe::graph::Graph> graph, Handle handle,
                     const std::vector<fe::NumericalNote_t>& deselected, GraphPlan* plan,
                     const Tuning* tuning = nullptr) {
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
  const int64_t listed = static_cast<int64_t>(graph->get_execution_plan_count());
  // The alternative recorded: the heuristics' engine is built as a fallback
  // (for a call that does not offer it), nothing is measured.
  bool alternative_recorded = false;
  if (tuning) {
    plan->alternative = tuning->alternative;
    const std::string recorded = tuning::recorded(tuning->file, tuning->key);
    alternative_recorded = !recorded.empty() && recorded == tuning->alternative;
    if (!recorded.empty() && !alternative_recorded &&
        build_recorded(*graph, handle, *tuning, recorded, deselected, plan)) {
      plan->graph = std::move(graph);
      return;
    }
    if (!alternative_recorded && tuning->mode == tuning::Mode::kWide) {
      int64_t tried = 0;
      const int64_t appended = append_knob_neighbours(*graph, listed, &tried);
      if (appended > 0 && !deselected.empty()) graph->deselect_numeric_notes(deselected);  // theirs too
      plan->candidates_note = "the heuristics' " + std::to_string(listed) + " configurations and " +
                              std::to_string(appended) + " of " + std::to_string(tried) +
                              " one knob away that cuDNN accepted";
    }
  }
  const bool measure = tuning && !alternative_recorded;
  if (!step("check_support", graph->check_support(handle))) return;
  const fe::BuildPlanPolicy_t policy = measure ? fe::BuildPlanPolicy_t::ALL : fe::BuildPlanPolicy_t::HEURISTICS_CHOICE;
  if (!step("build_plans", graph->build_plans(handle, policy))) return;
  int64_t workspace = 0;
  if (!step("get_workspace_size", graph->get_workspace_size(workspace))) return;
  if (graph->get_plan_name(plan->engine).is_bad()) plan->engine = "?";
  plan->workspace = workspace;
  if (alternative_recorded) {
    plan->chosen = kAlternativeIndex;
    plan->engine = tuning->alternative + " (tuned, recorded in " + tuning->file + "; else " + plan->engine + ")";
  }
  if (measure) {
    plan->key = tuning->key;
    plan->tuning_file = tuning->file;
    std::vector<GraphPlan::Timing> built;
    std::set<std::string> names;
    int64_t too_large = 0;
    const int64_t engines = static_cast<int64_t>(graph->get_execution_plan_count());
    for (int64_t i = 0; i < engines; ++i) {
      GraphPlan::Timing t;
      t.index = i;
      if (graph->get_plan_name_at_index(i, t.engine).is_bad() ||
          graph->get_workspace_size_plan_at_index(i, t.workspace).is_bad())
        continue;  // an engine that did not build
      if (i >= listed && t.workspace > kMaxNeighbourWorkspace) {
        ++too_large;
        continue;  // a neighbour the pool need not hold
      }
      // The same configuration listed twice (heuristics mode A's list, then
      // the fallback's, both name a knobless eng0): measured once.
      if (!names.insert(t.engine).second) continue;
      built.push_back(t);
    }
    if (!tuning->alternative.empty()) {
      GraphPlan::Timing t;
      t.index = kAlternativeIndex;
      t.engine = tuning->alternative;
      built.push_back(t);
    }
    if (!plan->candidates_note.empty())
      plan->candidates_note += "; " + std::to_string(built.size()) + " built to measure" +
                               (too_large ? " (" + std::to_string(too_large) + " left out for a workspace over " +
                                                std::to_string(kMaxNeighbourWorkspace >> 20) + " MiB)"
                                          : std::string());
    if (built.size() > 1) plan->timings = std::move(built);
  }
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
                std::to_string(plan->workspace) + " bytes) for a " + what() +
                (plan->candidates_note.empty() ? std::string() : "; tuning, wide: " + plan->candidates_note));
    else
      debug_log(std::string(who) + ": cuDNN declined a " + what() + " (" + plan->declined + ")");
    found = ctx.plans.emplace(key, std::move(plan)).first;
  }
  *out = static_cast<const GraphPlan*>(found->second.get());
  return AOTIRT_OK;
}

// Queues a built plan on `stream` (the context's handle is set to it) with
// the operands' pointers by uid, and a workspace from the pool: the chosen
// engine's (a tuned plan's) or the heuristics' choice; or the alternative,
// where a tuned plan chose it (a call of the key that does not offer it,
// which the shims never make, or a call it fails, runs the heuristics'
// engine).
template <typename Describe>
aotirt_status execute(const char* who, const GraphPlan& plan, Context& ctx,
                      std::unordered_map<int64_t, void*>& pointers, const StreamRef& stream, const Describe& what,
                      const Alternative* alternative = nullptr) {
  if (!plan.timings.empty()) {
    AOTIRT_TRY(measure_and_choose(who, plan, ctx, pointers, stream, what, alternative));
    // Still measuring: a CUDA graph captured now would keep this call's
    // engine for good, so the graph code runs eagerly a little longer.
    if (!plan.timings.empty()) note_unfinished_measurement();
  }
  if (plan.chosen == kAlternativeIndex && alternative) {
    if (alternative->run(alternative->call) == AOTIRT_OK) return AOTIRT_OK;
    // The choice cannot run this call (its scratch memory, say): the
    // heuristics' engine, built beside it, does, and writes every output.
    debug_log(std::string(who) + ": the tuning's choice " + alternative->name + " failed for a " + what() + " (" +
              aotirt_last_error_message() + "); cuDNN's heuristics' engine " + plan.engine + " runs it");
    clear_error();
  }
  int64_t bytes = plan.workspace;
  if (plan.chosen >= 0 && plan.graph->get_workspace_size_plan_at_index(plan.chosen, bytes).is_bad())
    bytes = plan.workspace;
  StorageRef workspace;
  if (bytes > 0)
    AOTIRT_TRY(allocate_storage(static_cast<size_t>(bytes), AOTIRT_DEVICE_CUDA, ctx.device, stream, &workspace));
  void* space = workspace ? workspace->data : nullptr;
  fe::error_t status = plan.chosen >= 0 ? plan.graph->execute_plan_at_index(ctx.handle, pointers, space, plan.chosen)
                                        : plan.graph->execute(ctx.handle, pointers, space);
  if (status.is_bad())
    return fail(AOTIRT_ERROR_AOTI,
                std::string(who) + ": cuDNN failed to execute its plan for a " + what() + ": " + status.get_message());
  return AOTIRT_OK;
}

}  // namespace cudnn
}  // namespace aotirt

#endif  // AOTIRT_HAVE_CUDNN
