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
#include "shims/libs/cudnn_tuning.h"

#if CUDNN_FRONTEND_VERSION < 11300
#error "aotirt needs cudnn-frontend 1.13 or newer (pip install -U nvidia-cudnn-frontend)"
#endif

namespace aotirt {
namespace cudnn {

namespace fe = cudnn_frontend;

// A built graph with its plan, or why cuDNN declined the key (kept: a call
// cuDNN cannot run is then answered at once, during a capture too).
//
// With tuning on (cudnn_tuning.h) every engine of the heuristics' list is
// built, and `chosen` names the one that runs (-1: the heuristics' own
// choice, until a measured or recorded one replaces it). The tuning state
// changes as calls execute the plan, hence mutable: a plan belongs to one
// thread's context, so no other thread sees it change.
struct GraphPlan : Cached {
  std::unique_ptr<fe::graph::Graph> graph;
  int64_t workspace = 0;
  std::string engine;    // the plan's engine, for the debug log
  std::string declined;  // empty when built

  struct Timing {
    int64_t index = 0, workspace = 0;
    std::string engine;
    cudaEvent_t start = nullptr, stop = nullptr;
  };
  mutable int64_t chosen = -1;
  mutable std::vector<Timing> timings;  // the engines to measure; their events once queued
  mutable bool queued = false;
  std::string tuning_file, key;         // where the choice of `key` is recorded

  ~GraphPlan() override {
    for (Timing& t : timings) {
      if (t.start) cudaEventDestroy(t.start);
      if (t.stop) cudaEventDestroy(t.stop);
    }
  }
};

// What a tuned plan needs besides its graph: the key its choice is kept
// under, and the choices' file (tuning::file_for).
struct Tuning {
  std::string key, file;
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
//
// With `tuning` (tuning on, for a shim that tunes), every engine is built:
// the one recorded for the key in the choices' file runs from the start;
// without a record, the heuristics' choice runs and the others are listed
// in plan->timings for the first call to measure (measure_and_choose).
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
  if (!step("check_support", graph->check_support(handle))) return;
  const fe::BuildPlanPolicy_t policy = tuning ? fe::BuildPlanPolicy_t::ALL : fe::BuildPlanPolicy_t::HEURISTICS_CHOICE;
  if (!step("build_plans", graph->build_plans(handle, policy))) return;
  int64_t workspace = 0;
  if (!step("get_workspace_size", graph->get_workspace_size(workspace))) return;
  if (graph->get_plan_name(plan->engine).is_bad()) plan->engine = "?";
  plan->workspace = workspace;
  if (tuning) {
    plan->key = tuning->key;
    plan->tuning_file = tuning->file;
    const std::string recorded = tuning::recorded(tuning->file, tuning->key);
    std::vector<GraphPlan::Timing> built;
    const int64_t engines = static_cast<int64_t>(graph->get_execution_plan_count());
    for (int64_t i = 0; i < engines; ++i) {
      GraphPlan::Timing t;
      t.index = i;
      if (graph->get_plan_name_at_index(i, t.engine).is_bad() ||
          graph->get_workspace_size_plan_at_index(i, t.workspace).is_bad())
        continue;  // an engine that did not build
      if (!recorded.empty() && t.engine == recorded) {
        plan->chosen = i;
        plan->workspace = t.workspace;
        plan->engine = t.engine + " (tuned, recorded in " + tuning->file + ")";
        built.clear();
        break;
      }
      built.push_back(t);
    }
    // A recorded engine this cuDNN did not build is measured for again.
    if (plan->chosen < 0 && built.size() > 1) plan->timings = std::move(built);
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
                std::to_string(plan->workspace) + " bytes) for a " + what());
    else
      debug_log(std::string(who) + ": cuDNN declined a " + what() + " (" + plan->declined + ")");
    found = ctx.plans.emplace(key, std::move(plan)).first;
  }
  *out = static_cast<const GraphPlan*>(found->second.get());
  return AOTIRT_OK;
}

// The first call of a plan to tune queues each engine between two events
// (kTunedRuns runs; the outputs they write are overwritten by the call's own
// run after them). A later call whose events have all completed (polled,
// never waited for; not while the stream is being captured, where the plan
// must not change) takes the fastest engine and records it.
constexpr int kTunedRuns = 3;

template <typename Describe>
aotirt_status measure_and_choose(const char* who, const GraphPlan& plan, Context& ctx,
                                 std::unordered_map<int64_t, void*>& pointers, const StreamRef& stream,
                                 const Describe& what) {
  if (!plan.queued) {
    int64_t most = 0;
    for (const GraphPlan::Timing& t : plan.timings) most = t.workspace > most ? t.workspace : most;
    StorageRef workspace;
    if (most > 0)
      AOTIRT_TRY(allocate_storage(static_cast<size_t>(most), AOTIRT_DEVICE_CUDA, ctx.device, stream, &workspace));
    // An engine that built but will not run is left out of the choice (said
    // in the debug log): the call goes on with the others.
    std::vector<GraphPlan::Timing> queued;
    for (GraphPlan::Timing& t : plan.timings) {
      AOTIRT_CUDA_TRY(cudaEventCreate(&t.start));
      AOTIRT_CUDA_TRY(cudaEventCreate(&t.stop));
      AOTIRT_CUDA_TRY(cudaEventRecord(t.start, stream->handle));
      fe::error_t status;
      for (int run = 0; run < kTunedRuns && status.is_good(); ++run)
        status = plan.graph->execute_plan_at_index(ctx.handle, pointers, workspace ? workspace->data : nullptr, t.index);
      if (status.is_good()) AOTIRT_CUDA_TRY(cudaEventRecord(t.stop, stream->handle));
      if (status.is_good()) {
        queued.push_back(t);
      } else {
        debug_log(std::string(who) + ": cuDNN tuning leaves out engine " + t.engine + " for a " + what() + ": " +
                  status.get_message());
        cudaEventDestroy(t.start);
        cudaEventDestroy(t.stop);
      }
      t.start = t.stop = nullptr;  // owned by `queued` now, or destroyed
    }
    plan.timings = std::move(queued);
    plan.queued = true;
    return AOTIRT_OK;
  }
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  AOTIRT_CUDA_TRY(cudaStreamIsCapturing(stream->handle, &capturing));
  if (capturing != cudaStreamCaptureStatusNone) return AOTIRT_OK;
  const cudaError_t ready = cudaEventQuery(plan.timings.back().stop);  // the last queued: all done when it is
  if (ready == cudaErrorNotReady) return AOTIRT_OK;
  if (ready != cudaSuccess) return fail_cuda(ready, std::string(who) + ": polling cuDNN's tuning events");
  const GraphPlan::Timing* best = nullptr;
  float best_ms = 0, first_ms = 0;
  for (const GraphPlan::Timing& t : plan.timings) {
    float ms = 0;
    AOTIRT_CUDA_TRY(cudaEventElapsedTime(&ms, t.start, t.stop));
    if (&t == &plan.timings.front()) first_ms = ms;
    if (!best || ms < best_ms) best = &t, best_ms = ms;
  }
  plan.chosen = best->index;
  debug_log(std::string(who) + ": cuDNN tuning measured " + std::to_string(plan.timings.size()) + " engines for a " +
            what() + ": " + best->engine + " at " + std::to_string(best_ms * 1000 / kTunedRuns) +
            " us a run (the heuristics' first, " + plan.timings.front().engine + ", " +
            std::to_string(first_ms * 1000 / kTunedRuns) + " us)");
  tuning::record(plan.tuning_file, plan.key, best->engine);
  for (GraphPlan::Timing& t : plan.timings) {
    cudaEventDestroy(t.start);
    cudaEventDestroy(t.stop);
  }
  plan.timings.clear();
  return AOTIRT_OK;
}

// Queues a built plan on `stream` (the context's handle is set to it) with
// the operands' pointers by uid, and a workspace from the pool: the chosen
// engine's (a tuned plan's) or the heuristics' choice.
template <typename Describe>
aotirt_status execute(const char* who, const GraphPlan& plan, Context& ctx,
                      std::unordered_map<int64_t, void*>& pointers, const StreamRef& stream, const Describe& what) {
  if (!plan.timings.empty()) AOTIRT_TRY(measure_and_choose(who, plan, ctx, pointers, stream, what));
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
