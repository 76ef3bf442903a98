// The measurement of a tuned plan's engines (AOTIRT_CUDNN_TUNE, see
// cudnn_tuning.h), queued by its first call and read by a later one that
// finds it done: the host polls, never waits.
#pragma once

#if defined(AOTIRT_HAVE_CUDNN)

#include <cudnn_frontend.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/errors.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"
#include "shims/libs/cudnn_plan.h"
#include "shims/libs/cudnn_tuning.h"
#include "shims/libs/gpu_hold.h"

namespace aotirt {
namespace cudnn {

namespace fe = cudnn_frontend;

// The first call of a plan to tune queues, ahead of its own run (which
// overwrites the outputs they write), each engine's measurement:
//  - each engine runs twice untimed, so that what is timed is not its first
//    launch (its kernels' lazy loading, cold caches); one that fails to run
//    is left out (said in the debug log), not an error of the call. The
//    host times its own work in both runs: an engine other than the
//    heuristics' whose runs each take the host over kHostBoundUs to queue
//    is left out too (below);
//  - then per engine a GPU hold (gpu_hold.h: per run kHoldUsPerRun, or
//    half as much again as the host took to queue the second warm-up run
//    where that is longer), and kTunedRuns runs between two CUDA events: the host queues the runs
//    while the hold spins, so they run back to back after it and the events
//    time the GPU's work, not the host's launches (a small convolution's
//    engine runs in less time than the host takes to queue it). Where the
//    host took longer to queue them than the hold lasted, the debug log
//    says so: that engine's time may hold gaps.
// A later call whose events have all completed (polled, never waited for;
// not while the stream is being captured, where the plan must not change
// and no hold may be recorded) reads them. Where more than kFinalists + 1
// ran, it queues a second round of the heuristics' engine and the
// kFinalists fastest others (tuning::finalists), kFinalRuns runs each, and
// a call that finds that one done chooses; otherwise (or where the second
// round cannot be queued) it chooses from the first round's times: the
// heuristics' engine unless another is faster by more than kTunedMargin
// (tuning::choose_plan). The choice is recorded.
constexpr int kTunedRuns = 5;
constexpr int kFinalists = 3;
constexpr int kFinalRuns = 15;
// Meant to be well over the host's time to queue one run of any candidate
// (the channels-last alternative's, three launches and cuDNN's execute, is
// the longest); the debug log says where it was not.
constexpr double kHoldUsPerRun = 200;
// On an H100 (bench/runs/s21-h100-tuning.md) six of cuDNN's engines for
// depthwise convolutions took the host 0.2 to 50 ms to queue one run,
// growing with the channels (they launch per group), where the engines
// chosen ran in 2 to 7 us of GPU time. None won; timing them cost 4.8 s
// of host time in one tuning of 43 convolutions.
constexpr double kHostBoundUs = 2000;
constexpr double kMostHoldUs = 100000;  // gpu_hold's own bound
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
// runs. plan.timings ends with the engines whose both events are recorded;
// `left_out` (where given) gets the index of each engine left out.
template <typename Describe>
aotirt_status queue_measurement(const char* who, const GraphPlan& plan, Context& ctx,
                                std::unordered_map<int64_t, void*>& pointers, const StreamRef& stream,
                                const Describe& what, const Alternative* alternative,
                                std::vector<int64_t>* left_out = nullptr) {
  // In the second round, what the first measured still chooses (measure_and_choose).
  const char* outcome = plan.final_round ? "the first round's times choose" : "nothing measured";
  int64_t most = 0;
  for (const GraphPlan::Timing& t : plan.timings) most = t.workspace > most ? t.workspace : most;
  StorageRef workspace;
  // An engine's workspace the pool cannot give (some want far more than the
  // heuristics' choice) is no reason to fail a call that runs without it.
  if (most > 0 &&
      allocate_storage(static_cast<size_t>(most), AOTIRT_DEVICE_CUDA, ctx.device, stream, &workspace) != AOTIRT_OK) {
    debug_log(std::string(who) + ": cuDNN tuning could not allocate the engines' largest workspace (" +
              std::to_string(most) + " bytes) for a " + what() + ": " + outcome);
    clear_error();  // the call itself runs without it
    plan.timings.clear();
    return AOTIRT_OK;
  }
  void* space = workspace ? workspace->data : nullptr;
  // One run of an engine or of the alternative: "" when queued, else why not.
  auto run_once = [&](const GraphPlan::Timing& t) -> std::string {
    if (t.index == kAlternativeIndex) {
      if (!alternative) return "this call does not offer it";
      if (alternative->run(alternative->call) == AOTIRT_OK) return "";
      const std::string why = aotirt_last_error_message();
      clear_error();  // a candidate that cannot run is left out, not the call's error
      return why;
    }
    fe::error_t status = plan.graph->execute_plan_at_index(ctx.handle, pointers, space, t.index);
    return status.is_good() ? "" : status.get_message();
  };
  auto leave_out = [&](const GraphPlan::Timing& t, const std::string& why) {
    debug_log(std::string(who) + ": cuDNN tuning leaves out engine " + t.engine + " for a " + what() + ": " + why);
    if (left_out) left_out->push_back(t.index);
  };
  auto host_us_since = [](std::chrono::steady_clock::time_point began) {  // the host's own work, timed by the host
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - began).count();
  };
  std::vector<std::pair<GraphPlan::Timing, double>> runs;  // the warm-up: each engine, its host us a run
  for (const GraphPlan::Timing& t : plan.timings) {
    const auto first_began = std::chrono::steady_clock::now();
    std::string why = run_once(t);
    const double first_us = host_us_since(first_began);  // its kernels' loading too: usually the longer
    const auto began = std::chrono::steady_clock::now();
    if (why.empty()) why = run_once(t);
    const double host_us = host_us_since(began);
    if (!why.empty()) {
      leave_out(t, why);
    } else if (std::min(first_us, host_us) > kHostBoundUs && t.engine != plan.engine) {  // both: not a hiccup
      leave_out(t, "each of two runs took the host at least " + std::to_string(std::min(first_us, host_us)) +
                       " us to queue, over the " +
                       std::to_string(kHostBoundUs) + " us bound");
    } else {
      runs.push_back({t, host_us});
    }
  }
  plan.timings.clear();
  if (runs.size() < 2) {  // nothing to choose between: the heuristics' engine runs, unrecorded
    debug_log(std::string(who) + ": cuDNN tuning has " + std::to_string(runs.size()) + " engine(s) that run for a " +
              what() + ": " + outcome);
    return AOTIRT_OK;
  }
  const int timed_runs = plan.final_round ? kFinalRuns : kTunedRuns;
  for (const auto& [t, warm_host_us] : runs) {
    plan.timings.push_back(t);  // owns its events from here: end_measurement frees them
    GraphPlan::Timing& timed = plan.timings.back();
    AOTIRT_CUDA_TRY(cudaEventCreate(&timed.start));
    AOTIRT_CUDA_TRY(cudaEventCreate(&timed.stop));
    const double hold_us = std::min(kMostHoldUs, timed_runs * std::max(kHoldUsPerRun, 1.5 * warm_host_us));
    AOTIRT_TRY(gpu_hold(stream->handle, hold_us));
    const auto queue_began = std::chrono::steady_clock::now();
    AOTIRT_CUDA_TRY(cudaEventRecord(timed.start, stream->handle));
    std::string why;
    for (int run = 0; run < timed_runs && why.empty(); ++run) why = run_once(timed);
    if (why.empty()) {
      AOTIRT_CUDA_TRY(cudaEventRecord(timed.stop, stream->handle));
      const double queued_us = host_us_since(queue_began);
      if (queued_us > hold_us)
        debug_log(std::string(who) + ": cuDNN tuning took " + std::to_string(queued_us) + " us to queue " +
                  std::to_string(timed_runs) + " runs of " + t.engine + " for a " + what() + ", longer than the " +
                  std::to_string(hold_us) + " us hold: its time may include the host's gaps");
    } else {
      leave_out(timed, why);
      cudaEventDestroy(timed.start);
      cudaEventDestroy(timed.stop);
      plan.timings.pop_back();
    }
  }
  if (plan.timings.size() < 2) end_measurement(plan);
  return AOTIRT_OK;
}

// Chooses among `timed` (times[i] us a run is timed[i]'s; `heuristic` the
// heuristics' engine's index, -1 where it did not run), says so in the
// debug log and records the choice. `measured`: how many engines the
// first round timed.
template <typename Describe>
void choose_and_record(const char* who, const GraphPlan& plan, const std::vector<GraphPlan::Timing>& timed,
                       const std::vector<double>& times, int heuristic, size_t measured, const Describe& what) {
  const int best = tuning::choose_plan(times, heuristic, kTunedMargin);
  if (best < 0) return;
  const GraphPlan::Timing& chosen = timed[best];
  plan.chosen = chosen.index;
  const std::string against = heuristic < 0
                                  ? std::string("the heuristics' choice ") + plan.engine + " did not run"
                                  : "the heuristics' " + plan.engine + " at " + std::to_string(times[heuristic]) + " us";
  debug_log(std::string(who) + ": cuDNN tuning measured " + std::to_string(measured) + " engines for a " + what() +
            ": " + (best == heuristic ? "kept " : "chose ") + chosen.engine + " at " + std::to_string(times[best]) +
            " us a run (" + against + ")");
  tuning::record(plan.tuning_file, plan.key, chosen.engine);
}

template <typename Describe>
aotirt_status measure_and_choose(const char* who, const GraphPlan& plan, Context& ctx,
                                 std::unordered_map<int64_t, void*>& pointers, const StreamRef& stream,
                                 const Describe& what, const Alternative* alternative) {
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  AOTIRT_CUDA_TRY(cudaStreamIsCapturing(stream->handle, &capturing));
  if (capturing != cudaStreamCaptureStatusNone) return AOTIRT_OK;
  if (!plan.queued) {
    plan.queued = true;
    const aotirt_status status = queue_measurement(who, plan, ctx, pointers, stream, what, alternative);
    if (status != AOTIRT_OK) end_measurement(plan);  // a failed measurement is not tried again
    return status;
  }
  const cudaError_t ready = poll_event(plan.timings.back().stop);  // the last queued: all done when it is
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
    times.push_back(static_cast<double>(ms) * 1000 / (plan.final_round ? kFinalRuns : kTunedRuns));
    if (t.index == kAlternativeIndex && !plan.final_round)  // said apart: the choice's line names two engines
      debug_log(std::string(who) + ": cuDNN tuning timed " + t.engine + " at " + std::to_string(times.back()) +
                " us a run for a " + what());
  }
  if (!plan.final_round && static_cast<int>(times.size()) > kFinalists + 1) {
    const std::vector<int> keep = tuning::finalists(times, heuristic, kFinalists);
    if (keep.size() >= 2) {
      std::vector<GraphPlan::Timing> again;
      std::string names;
      for (int i : keep) {
        GraphPlan::Timing t = plan.timings[i];
        t.start = t.stop = nullptr;  // this round's events are freed below
        names += (names.empty() ? "" : ", ") + t.engine;
        again.push_back(t);
      }
      plan.candidates = times.size();
      std::vector<GraphPlan::Timing> first_round = plan.timings;  // its names, kept past its events
      end_measurement(plan);
      plan.timings = std::move(again);
      plan.final_round = true;
      debug_log(std::string(who) + ": cuDNN tuning's first round timed " + std::to_string(plan.candidates) +
                " engines for a " + what() + "; timing again: " + names);
      std::vector<int64_t> left_out;
      const aotirt_status status = queue_measurement(who, plan, ctx, pointers, stream, what, alternative, &left_out);
      if (status != AOTIRT_OK) {
        end_measurement(plan);
        return status;
      }
      // Fewer than two of them could run again: what the first round
      // measured still chooses, rather than measuring it all again in the
      // next process, among those that did not fail to run just now.
      if (plan.timings.empty()) {
        for (size_t i = 0; i < first_round.size(); ++i)
          if (std::find(left_out.begin(), left_out.end(), first_round[i].index) != left_out.end())
            times[i] = std::numeric_limits<double>::quiet_NaN();
        choose_and_record(who, plan, first_round, times, heuristic, times.size(), what);
      }
      return AOTIRT_OK;
    }
  }
  choose_and_record(who, plan, plan.timings, times, heuristic, plan.final_round ? plan.candidates : times.size(),
                    what);
  end_measurement(plan);
  return AOTIRT_OK;
}

}  // namespace cudnn
}  // namespace aotirt

#endif  // AOTIRT_HAVE_CUDNN
