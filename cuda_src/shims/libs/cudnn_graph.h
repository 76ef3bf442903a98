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
#include "shims/libs/gpu_hold.h"

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
// under, the choices' file (tuning::file_for) and the mode.
struct Tuning {
  std::string key, file;
  tuning::Mode mode = tuning::Mode::kListed;
};

// The wide mode's bounds: how many configurations one knob away from the
// heuristics' list a key measures at most (each costs a plan build, about a
// millisecond, and a measurement, about a millisecond of GPU, once per key),
// and the largest workspace one of them may want (a split-K variant can
// ask for far more than the list's engines; the pool need not hold it).
constexpr size_t kMaxKnobNeighbours = 48;
constexpr int64_t kMaxNeighbourWorkspace = int64_t{256} << 20;

// Appending configurations to a graph's heuristics list needs a frontend
// that keeps each one's notes in line with it: 1.32's plans.h says that
// older ones read an appended configuration's notes from the list's first
// (so a deselected note could let one through). With an older frontend the
// wide mode measures the list alone, as AOTIRT_CUDNN_TUNE=1 does.
#if CUDNN_FRONTEND_VERSION >= 13200

// The heuristics' configurations of `graph` (its first `count` plans) as
// engine configurations, leaving out those whose names do not parse and
// those cuDNN compiles at run time (a neighbour of theirs would compile
// again: seconds each).
inline std::vector<tuning::EngineConfig> listed_configs(fe::graph::Graph& graph, int64_t count) {
  std::vector<tuning::EngineConfig> out;
  for (int64_t i = 0; i < count; ++i) {
    std::string name;
    std::vector<fe::BehaviorNote_t> notes;
    tuning::EngineConfig config;
    if (graph.get_plan_name_at_index(i, name).is_bad() || !tuning::parse_tag(name, &config)) continue;
    if (graph.get_behavior_notes_for_plan_at_index(i, notes).is_bad()) continue;
    bool compiled = false;
    for (fe::BehaviorNote_t note : notes) compiled = compiled || note == fe::BehaviorNote_t::RUNTIME_COMPILATION;
    if (!compiled) out.push_back(std::move(config));
  }
  return out;
}

// Appends `config` to `graph`'s plans; false where cuDNN refuses it.
inline bool append_config(fe::graph::Graph& graph, const tuning::EngineConfig& config) {
  std::unordered_map<fe::KnobType_t, int64_t> knobs;
  for (const auto& knob : config.knobs) knobs[static_cast<fe::KnobType_t>(knob.first)] = knob.second;
  return graph.create_execution_plan(config.engine, knobs).is_good();
}

// The wide mode: appends the configurations one knob away from the
// heuristics' list (tuning::knob_neighbours); returns how many.
inline int64_t append_knob_neighbours(fe::graph::Graph& graph, int64_t listed) {
  std::unordered_map<int64_t, std::vector<tuning::KnobRange>> ranges;
  const std::vector<tuning::EngineConfig> bases = listed_configs(graph, listed);
  for (const tuning::EngineConfig& base : bases) {
    if (ranges.count(base.engine)) continue;
    std::vector<fe::Knob> knobs;
    std::vector<tuning::KnobRange>& known = ranges[base.engine];
    if (graph.get_knobs_for_engine(base.engine, knobs).is_bad()) continue;  // no ranges: no neighbours
    for (const fe::Knob& k : knobs)
      known.push_back({static_cast<int64_t>(k.type), k.minValue, k.maxValue, k.stride});
  }
  auto ranges_of = [&](int64_t engine) -> const std::vector<tuning::KnobRange>* {
    auto found = ranges.find(engine);
    return found == ranges.end() ? nullptr : &found->second;
  };
  int64_t appended = 0;
  for (const tuning::EngineConfig& config : tuning::knob_neighbours(bases, ranges_of, kMaxKnobNeighbours))
    appended += append_config(graph, config) ? 1 : 0;
  return appended;
}

#else
inline bool append_config(fe::graph::Graph&, const tuning::EngineConfig&) { return false; }
inline int64_t append_knob_neighbours(fe::graph::Graph&, int64_t) { return 0; }
#endif

// A choice recorded for the key, built alone: the heuristics' configuration
// of that name, or (wide mode) the configuration the name spells. False
// where there is none or it does not build (then the key is measured again).
inline bool build_recorded(fe::graph::Graph& graph, Handle handle, const Tuning& tuning, const std::string& recorded,
                           const std::vector<fe::NumericalNote_t>& deselected, GraphPlan* plan) {
  int64_t index = -1;
  const int64_t listed = static_cast<int64_t>(graph.get_execution_plan_count());
  for (int64_t i = 0; i < listed && index < 0; ++i) {
    std::string name;
    if (graph.get_plan_name_at_index(i, name).is_good() && name == recorded) index = i;
  }
  tuning::EngineConfig config;
  if (index < 0 && tuning.mode == tuning::Mode::kWide && tuning::parse_tag(recorded, &config) &&
      append_config(graph, config)) {
    index = listed;
    if (!deselected.empty()) graph.deselect_numeric_notes(deselected);  // the appended one's notes too
  }
  int64_t workspace = 0;
  if (index < 0 || graph.build_plan_at_index(handle, index).is_bad() ||
      graph.get_workspace_size_plan_at_index(index, workspace).is_bad())
    return false;
  plan->chosen = index;
  plan->workspace = workspace;
  plan->engine = recorded + " (tuned, recorded in " + tuning.file + ")";
  plan->key = tuning.key;
  plan->tuning_file = tuning.file;
  return true;
}

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
  if (tuning) {
    const std::string recorded = tuning::recorded(tuning->file, tuning->key);
    if (!recorded.empty() && build_recorded(*graph, handle, *tuning, recorded, deselected, plan)) {
      plan->graph = std::move(graph);
      return;
    }
    if (tuning->mode == tuning::Mode::kWide && append_knob_neighbours(*graph, listed) > 0 &&
        !deselected.empty())
      graph->deselect_numeric_notes(deselected);  // the appended ones' notes too
  }
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
    std::vector<GraphPlan::Timing> built;
    const int64_t engines = static_cast<int64_t>(graph->get_execution_plan_count());
    for (int64_t i = 0; i < engines; ++i) {
      GraphPlan::Timing t;
      t.index = i;
      if (graph->get_plan_name_at_index(i, t.engine).is_bad() ||
          graph->get_workspace_size_plan_at_index(i, t.workspace).is_bad())
        continue;  // an engine that did not build
      if (i >= listed && t.workspace > kMaxNeighbourWorkspace) continue;  // a neighbour the pool need not hold
      built.push_back(t);
    }
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
                std::to_string(plan->workspace) + " bytes) for a " + what());
    else
      debug_log(std::string(who) + ": cuDNN declined a " + what() + " (" + plan->declined + ")");
    found = ctx.plans.emplace(key, std::move(plan)).first;
  }
  *out = static_cast<const GraphPlan*>(found->second.get());
  return AOTIRT_OK;
}

// The first call of a plan to tune queues, ahead of its own run (which
// overwrites the outputs they write), each engine's measurement:
//  - each engine runs once untimed, so that what is timed is not its first
//    launch (its kernels' lazy loading, cold caches); one that fails to run
//    is left out (said in the debug log), not an error of the call;
//  - then per engine a GPU hold (gpu_hold.h, kHoldUs), and kTunedRuns runs
//    between two CUDA events: the host queues the runs while the hold
//    spins, so they run back to back after it and the events time the
//    GPU's work, not the host's launches (a small convolution's engine runs
//    in less time than the host takes to queue it).
// A later call whose events have all completed (polled, never waited for;
// not while the stream is being captured, where the plan must not change
// and no hold may be recorded) keeps the heuristics' engine unless another
// is faster by more than kTunedMargin (tuning::choose_plan), and records
// the choice.
constexpr int kTunedRuns = 5;
constexpr double kHoldUs = 1000;      // well over the host's time to queue kTunedRuns runs
constexpr double kTunedMargin = 0.03;  // the run-to-run noise of the events' timing

// Frees the measurement's events and ends it: the plan runs the engine
// chosen so far (the heuristics', unless one was chosen).
inline void end_measurement(const GraphPlan& plan) {
  for (GraphPlan::Timing& t : plan.timings) {
    if (t.start) cudaEventDestroy(t.start);  // released once a queued record completes
    if (t.stop) cudaEventDestroy(t.stop);
  }
  plan.timings.clear();
}

// The first call's half of measure_and_choose: the warm-up and the timed
// runs. plan.timings ends with the engines whose both events are recorded.
template <typename Describe>
aotirt_status queue_measurement(const char* who, const GraphPlan& plan, Context& ctx,
                                std::unordered_map<int64_t, void*>& pointers, const StreamRef& stream,
                                const Describe& what) {
  int64_t most = 0;
  for (const GraphPlan::Timing& t : plan.timings) most = t.workspace > most ? t.workspace : most;
  StorageRef workspace;
  // An engine's workspace the pool cannot give (some want far more than the
  // heuristics' choice) is no reason to fail a call that runs without it.
  if (most > 0 &&
      allocate_storage(static_cast<size_t>(most), AOTIRT_DEVICE_CUDA, ctx.device, stream, &workspace) != AOTIRT_OK) {
    debug_log(std::string(who) + ": cuDNN tuning could not allocate the engines' largest workspace (" +
              std::to_string(most) + " bytes) for a " + what() + ": nothing measured");
    plan.timings.clear();
    return AOTIRT_OK;
  }
  void* space = workspace ? workspace->data : nullptr;
  auto leave_out = [&](const GraphPlan::Timing& t, fe::error_t status) {  // get_message is not const
    debug_log(std::string(who) + ": cuDNN tuning leaves out engine " + t.engine + " for a " + what() + ": " +
              status.get_message());
  };
  std::vector<GraphPlan::Timing> runs;  // the warm-up: every engine once, untimed
  for (const GraphPlan::Timing& t : plan.timings) {
    fe::error_t status = plan.graph->execute_plan_at_index(ctx.handle, pointers, space, t.index);
    if (status.is_good())
      runs.push_back(t);
    else
      leave_out(t, status);
  }
  plan.timings.clear();
  if (runs.size() < 2) {  // nothing to choose between: the heuristics' engine runs, unrecorded
    debug_log(std::string(who) + ": cuDNN tuning has " + std::to_string(runs.size()) + " engine(s) that run for a " +
              what() + ": nothing measured");
    return AOTIRT_OK;
  }
  for (const GraphPlan::Timing& t : runs) {
    plan.timings.push_back(t);  // owns its events from here: end_measurement frees them
    GraphPlan::Timing& timed = plan.timings.back();
    AOTIRT_CUDA_TRY(cudaEventCreate(&timed.start));
    AOTIRT_CUDA_TRY(cudaEventCreate(&timed.stop));
    AOTIRT_TRY(gpu_hold(stream->handle, kHoldUs));
    AOTIRT_CUDA_TRY(cudaEventRecord(timed.start, stream->handle));
    fe::error_t status;
    for (int run = 0; run < kTunedRuns && status.is_good(); ++run)
      status = plan.graph->execute_plan_at_index(ctx.handle, pointers, space, timed.index);
    if (status.is_good()) {
      AOTIRT_CUDA_TRY(cudaEventRecord(timed.stop, stream->handle));
    } else {
      leave_out(timed, status);
      cudaEventDestroy(timed.start);
      cudaEventDestroy(timed.stop);
      plan.timings.pop_back();
    }
  }
  if (plan.timings.size() < 2) end_measurement(plan);
  return AOTIRT_OK;
}

template <typename Describe>
aotirt_status measure_and_choose(const char* who, const GraphPlan& plan, Context& ctx,
                                 std::unordered_map<int64_t, void*>& pointers, const StreamRef& stream,
                                 const Describe& what) {
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  AOTIRT_CUDA_TRY(cudaStreamIsCapturing(stream->handle, &capturing));
  if (capturing != cudaStreamCaptureStatusNone) return AOTIRT_OK;
  if (!plan.queued) {
    plan.queued = true;
    const aotirt_status status = queue_measurement(who, plan, ctx, pointers, stream, what);
    if (status != AOTIRT_OK) end_measurement(plan);  // a failed measurement is not tried again
    return status;
  }
  const cudaError_t ready = cudaEventQuery(plan.timings.back().stop);  // the last queued: all done when it is
  if (ready == cudaErrorNotReady) return AOTIRT_OK;
  // A failure ends the measurement, so that it is not read again on every call.
  if (ready != cudaSuccess) {
    end_measurement(plan);
    return fail_cuda(ready, std::string(who) + ": polling cuDNN's tuning events");
  }
  std::vector<double> times;  // us a run
  int heuristic = -1;         // plan.engine names the heuristics' choice until a choice replaces it
  for (const GraphPlan::Timing& t : plan.timings) {
    float ms = 0;
    const cudaError_t read = cudaEventElapsedTime(&ms, t.start, t.stop);
    if (read != cudaSuccess) {
      end_measurement(plan);
      return fail_cuda(read, std::string(who) + ": reading cuDNN's tuning events (cudaEventElapsedTime)");
    }
    if (t.engine == plan.engine) heuristic = static_cast<int>(times.size());
    times.push_back(static_cast<double>(ms) * 1000 / kTunedRuns);
  }
  const int best = tuning::choose_plan(times, heuristic, kTunedMargin);
  if (best >= 0) {
    const GraphPlan::Timing& chosen = plan.timings[best];
    plan.chosen = chosen.index;
    const std::string against =
        heuristic < 0 ? std::string("the heuristics' choice ") + plan.engine + " did not run"
                      : "the heuristics' " + plan.engine + " at " + std::to_string(times[heuristic]) + " us";
    debug_log(std::string(who) + ": cuDNN tuning measured " + std::to_string(times.size()) + " engines for a " +
              what() + ": " + (best == heuristic ? "kept " : "chose ") + chosen.engine + " at " +
              std::to_string(times[best]) + " us a run (" + against + ")");
    tuning::record(plan.tuning_file, plan.key, chosen.engine);
  }
  end_measurement(plan);
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
