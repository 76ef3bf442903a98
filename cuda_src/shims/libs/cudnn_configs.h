// Engine configurations a tuned plan (cudnn_graph.h) builds beyond the
// heuristics' first choice: the wide mode's configurations one knob away
// from the heuristics' list (AOTIRT_CUDNN_TUNE=wide), and a recorded choice
// built alone from its name.
#pragma once

#if defined(AOTIRT_HAVE_CUDNN)

#include <cudnn_frontend.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "shims/libs/cudnn_knobs.h"
#include "shims/libs/cudnn_plan.h"
#include "shims/libs/cudnn_tuning.h"

namespace aotirt {
namespace cudnn {

namespace fe = cudnn_frontend;

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

// Appends `config` to `graph`'s plans; false where cuDNN refuses it (or a
// knob of its name has no frontend type).
inline bool append_config(fe::graph::Graph& graph, const tuning::EngineConfig& config) {
  std::unordered_map<fe::KnobType_t, int64_t> choices;
  return knobs::frontend_knobs(config, &choices) && graph.create_execution_plan(config.engine, choices).is_good();
}

// The wide mode: appends the configurations one knob away from the
// heuristics' list (tuning::knob_neighbours) that cuDNN accepts; returns
// how many, and sets `tried` to how many were offered.
inline int64_t append_knob_neighbours(fe::graph::Graph& graph, int64_t listed, int64_t* tried) {
  std::unordered_map<int64_t, std::vector<tuning::KnobRange>> ranges;
  const std::vector<tuning::EngineConfig> bases = listed_configs(graph, listed);
  for (const tuning::EngineConfig& base : bases) {
    if (ranges.count(base.engine)) continue;
    std::vector<fe::Knob> engine_knobs;
    std::vector<tuning::KnobRange>& known = ranges[base.engine];
    if (graph.get_knobs_for_engine(base.engine, engine_knobs).is_bad()) continue;  // no ranges: no neighbours
    for (const fe::Knob& k : engine_knobs) {
      int64_t backend_type = 0;  // as the bases' tags number it
      if (knobs::to_backend(k.type, &backend_type)) known.push_back({backend_type, k.minValue, k.maxValue, k.stride});
    }
  }
  auto ranges_of = [&](int64_t engine) -> const std::vector<tuning::KnobRange>* {
    auto found = ranges.find(engine);
    return found == ranges.end() ? nullptr : &found->second;
  };
  int64_t appended = 0;
  const std::vector<tuning::EngineConfig> neighbours = tuning::knob_neighbours(bases, ranges_of, kMaxKnobNeighbours);
  for (const tuning::EngineConfig& config : neighbours) appended += append_config(graph, config) ? 1 : 0;
  *tried = static_cast<int64_t>(neighbours.size());
  return appended;
}

#else
inline bool append_config(fe::graph::Graph&, const tuning::EngineConfig&) { return false; }
inline int64_t append_knob_neighbours(fe::graph::Graph&, int64_t, int64_t* tried) {
  *tried = 0;
  return 0;
}
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


}  // namespace cudnn
}  // namespace aotirt

#endif  // AOTIRT_HAVE_CUDNN
