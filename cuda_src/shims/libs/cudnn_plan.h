// The types of the cuDNN shims' cached plans (cudnn_graph.h): a built graph
// with its plan and its tuning state, the tuning's settings for a key, and
// an alternative to cuDNN's engines that a tuned key may measure. Only for
// builds with cuDNN's headers (AOTIRT_HAVE_CUDNN).
#pragma once

#if defined(AOTIRT_HAVE_CUDNN)

#include <cudnn_frontend.h>

#include <memory>
#include <string>
#include <vector>

#include "aotirt/aotirt.h"
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
// With tuning on (cudnn_tuning.h) every candidate is built (the heuristics'
// list, and in the wide mode the configurations one knob away), or only a
// recorded choice, and `chosen` names the one that runs (-1: the
// heuristics' own choice, until a measured or recorded one replaces it;
// kAlternativeIndex: the shim's alternative, below). The tuning state
// changes as calls execute the plan, hence mutable: a plan belongs to one
// thread's context, so no other thread sees it change.
struct GraphPlan : Cached {
  std::unique_ptr<fe::graph::Graph> graph;
  int64_t workspace = 0;
  std::string engine;    // the plan's engine, for the debug log
  std::string declined;  // empty when built
  std::string candidates_note;  // tuned: what was built to measure, for the debug log

  struct Timing {
    int64_t index = 0, workspace = 0;
    std::string engine;
    cudaEvent_t start = nullptr, stop = nullptr;
  };
  mutable int64_t chosen = -1;
  mutable std::vector<Timing> timings;  // the engines to measure; their events once queued
  mutable bool queued = false;
  std::string alternative;              // the one a shim offered when it was built (Tuning::alternative), or ""
  // The plan of what the alternative runs instead, where that is another
  // cuDNN graph (conv_alternatives.cpp), once built: later calls find it
  // here, without making and looking up its key. It lives in the same
  // context's cache, which is never emptied.
  mutable const GraphPlan* alternative_plan = nullptr;
  mutable bool final_round = false;     // timings are the finalists, measured again (cudnn_measure.h)
  mutable size_t candidates = 0;        // how many the first round measured
  std::string tuning_file, key;         // where the choice of `key` is recorded

  ~GraphPlan() override {
    for (Timing& t : timings) {
      if (t.start) cudaEventDestroy(t.start);
      if (t.stop) cudaEventDestroy(t.stop);
    }
  }
};

// A way to run a tuned key other than cuDNN's engines (a convolution's,
// conv_alternatives.h: cuBLAS's GEMM for a 1x1 one, padded channels for an
// RGB stem, channels-last copies for a 1-D one): measured beside them, and chosen
// and recorded under its name like one of them. The shim makes one per call
// of a key whose plan names an alternative: `run(call)` runs it with that
// call's operands (a function and a pointer, so that making one allocates
// nothing).
struct Alternative {
  const char* name;
  aotirt_status (*run)(const void* call);
  const void* call;
};
// GraphPlan::chosen and Timing::index of the alternative.
constexpr int64_t kAlternativeIndex = -2;

// What a tuned plan needs besides its graph: the key its choice is kept
// under, the choices' file (tuning::file_for), the mode, and the name of
// the alternative the shim offers for the key ("" for none).
struct Tuning {
  std::string key, file;
  tuning::Mode mode = tuning::Mode::kListed;
  std::string alternative;
};

// The tuning of the plan for `key`, built on `ctx`'s device, where
// AOTIRT_CUDNN_TUNE turns it on: false (the heuristics' engine, untuned)
// where it is off. The choices are kept per device kind, cuDNN version and
// mode (tuning::file_for); no alternative (a shim that offers one sets it).
inline bool tuning_for(const char* who, const Context& ctx, const std::string& key, Tuning* out) {
  const Library* library = nullptr;
  if (!tuning::enabled() || load(who, &library) != AOTIRT_OK) return false;
  const tuning::Mode mode = tuning::mode();
  *out = {key, tuning::file_for(ctx.sm_version, library->version, mode), mode, ""};
  return true;
}


}  // namespace cudnn
}  // namespace aotirt

#endif  // AOTIRT_HAVE_CUDNN
