// The opt-in measured choice of cuDNN's engines (AOTIRT_CUDNN_TUNE=1 or
// wide), and the file that keeps the choices between processes.
//
// cuDNN's heuristics name the engine they expect to be fastest, and torch
// runs that one (torch.backends.cudnn.benchmark is off by default). With
// tuning on, the first call of a plan key builds every engine the
// heuristics list (in the wide mode also the configurations one knob away
// from them; for some convolutions one other way of running them, such as
// cuBLAS's GEMM for a 1x1 channels-last one: an "alternative", cudnn_plan.h
// and conv_alternatives.h) and queues their measurement on the
// stream ahead of the call's own run (the call's result is still the
// heuristics' engine's): each candidate once untimed (its first launch
// loads its kernels), then each behind a short GPU hold (gpu_hold.h)
// between two CUDA events, and goes on without waiting
// (cudnn_measure.h). A later call of the key whose events have completed
// (poll_event: a poll, never a wait) takes the candidate `choose_plan`
// picks from then on (the heuristics' own unless another is faster by more
// than the noise) and appends the choice to the file, so that the next
// process builds that one alone at once and measures nothing. The host
// never waits for the measurements: the one rule holds with tuning on. It
// is paid once per key and process (or once per key, with a record): an
// opt-in warm-up cost, never a per-call one.
//
// The file: one line per key, the key in hex, a tab, the choice's name
// (cudnn-frontend's plan name, or the alternative's), under $AOTIRT_CACHE
// (else ~/.cache/aotirt), one file per compute capability and cuDNN
// version, since an engine's speed and its name's meaning depend on both,
// per mode, and per version of the measurement (kFileVersion), since an
// older one's choices are not trusted. An unreadable or unwritable file
// costs a measurement, never a failed call (said in the debug log).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace aotirt {
namespace cudnn {
namespace tuning {

// What AOTIRT_CUDNN_TUNE asks for (read once): unset or anything else, no
// measuring (cuDNN's heuristics' engine, as torch runs by default); "1",
// the engines cuDNN's heuristics list; "wide", those and, around each, the
// configurations one knob away (knob_neighbours): tile sizes, split-K and
// the like that the list's own configurations fix. The one list of modes.
enum class Mode { kOff, kListed, kWide };
Mode mode();
Mode mode_of(const char* text);  // AOTIRT_CUDNN_TUNE's text (nullptr: unset)
inline bool enabled() { return mode() != Mode::kOff; }

// The measurement the file's choices come from, in its name. Version 1
// (a name without it) timed each engine's first, cold launches and chose
// on noise: its choices are left unread, and measured again.
constexpr int kFileVersion = 2;

// The choices' file for a device of compute capability `sm_version` (major
// * 10 + minor), cuDNN `version` (cudnnGetVersion()) and a tuning mode: the
// wide mode's choices are kept apart, so that neither mode reads choices
// made among other candidates than its own.
std::string file_for(int sm_version, size_t version, Mode tuning_mode);

// The engine recorded for `key` in `path` (read once per path and kept), or
// "" when there is none.
std::string recorded(const std::string& path, const std::string& key);

// Keeps `key` -> `engine` for this process and appends it to `path`.
void record(const std::string& path, const std::string& key, const std::string& engine);

// One line of the file, and back: false for a line that is not one (a
// torn or foreign line is skipped, not trusted).
std::string line_of(const std::string& key, const std::string& engine);
bool parse_line(const std::string& line, std::string* key, std::string* engine);

// Of engines measured at `times` (each one's time a run, any unit), the
// position of the one to run: `heuristic` (the heuristics' own choice's
// position) unless another is faster than it by more than `margin` (a
// fraction of its time: 0.03 is 3%, the timing's noise), then the fastest.
// Without the heuristics' engine among them (heuristic outside times) the
// fastest; a time that is not a number >= 0 is never chosen; -1 when none
// can be.
int choose_plan(const std::vector<double>& times, int heuristic, double margin);

// Of engines measured at `times`, the positions (in order) of those a second,
// longer measurement compares: the heuristics' own (`heuristic`, when its
// time is usable) and the `count` fastest others. The best of many noisy
// figures is partly luck (the more candidates, the more an equal one seems
// faster), so the choice is made on figures taken again.
std::vector<int> finalists(const std::vector<double>& times, int heuristic, int count);

// An engine configuration as cuDNN names a plan: "eng<global index>", then
// "_k<knob type>=<value>" per knob in increasing type (cudnn-frontend's
// tag). The tag numbers knobs as cuDNN's backend does
// (cudnnBackendKnobType_t: k13 is TILEK), and so do `knobs` and KnobRange;
// the frontend's own KnobType_t numbers them differently (its TILEK is 6),
// so every knob crosses between the two in cudnn_knobs.h. A recorded
// choice is built again from its name alone.
struct EngineConfig {
  int64_t engine = -1;
  std::vector<std::pair<int64_t, int64_t>> knobs;  // (type, value), by type
  bool operator==(const EngineConfig& other) const { return engine == other.engine && knobs == other.knobs; }
};
std::string tag_of(const EngineConfig& config);
// False for a name that is not a tag (then it is matched by name only).
bool parse_tag(const std::string& tag, EngineConfig* out);

// The values a knob of an engine may take: min to max in steps of stride
// (`type` as the backend numbers it, as in EngineConfig).
struct KnobRange {
  int64_t type = 0, min = 0, max = 0, stride = 1;
};

// Values per knob that knob_neighbours tries, nearest the base's first.
constexpr int kValuesPerKnob = 6;

// The configurations one knob away from each of `bases` (the heuristics'
// list, best first): per base and knob of `ranges(engine)` (nullptr: none
// known) the base also sets, the knob's other values, nearest the base's
// first. In rounds, the nearest value of every base's every knob first,
// then the next nearest, so that a `cap` spreads over the list's best
// engines and knobs rather than exhausting the first one. None is one of
// `bases` or given twice; at most `cap` in all. Whether cuDNN builds one
// is for cuDNN to say: an invalid combination is left out then.
std::vector<EngineConfig> knob_neighbours(const std::vector<EngineConfig>& bases,
                                          const std::function<const std::vector<KnobRange>*(int64_t)>& ranges,
                                          size_t cap);

}  // namespace tuning
}  // namespace cudnn
}  // namespace aotirt
