// The opt-in measured choice of cuDNN's engines (AOTIRT_CUDNN_TUNE=1), and
// the file that keeps the choices between processes.
//
// cuDNN's heuristics name the engine they expect to be fastest, and torch
// runs that one (torch.backends.cudnn.benchmark is off by default). With
// tuning on, the first call of a plan key builds every engine the
// heuristics list, queues each of them between two CUDA events on the
// stream (the call's result is still the heuristics' engine's), and goes
// on without waiting. A later call of the key whose events have completed
// (cudaEventQuery: a poll, never a wait) takes the fastest engine from then
// on and appends the choice to the file, so that the next process builds
// that engine at once and measures nothing. The host never waits for the
// measurements: the one rule holds with tuning on.
//
// The file: one line per key, the key in hex, a tab, the engine's name
// (cudnn-frontend's plan name), under $AOTIRT_CACHE (else ~/.cache/aotirt),
// one file per compute capability and cuDNN version, since an engine's
// speed and its name's meaning depend on both. An unreadable or unwritable
// file costs a measurement, never a failed call (said in the debug log).
#pragma once

#include <cstddef>
#include <string>

namespace aotirt {
namespace cudnn {
namespace tuning {

// AOTIRT_CUDNN_TUNE=1 (read once).
bool enabled();

// The choices' file for a device of compute capability `sm_version` (major
// * 10 + minor) and cuDNN `version` (cudnnGetVersion()).
std::string file_for(int sm_version, size_t version);

// The engine recorded for `key` in `path` (read once per path and kept), or
// "" when there is none.
std::string recorded(const std::string& path, const std::string& key);

// Keeps `key` -> `engine` for this process and appends it to `path`.
void record(const std::string& path, const std::string& key, const std::string& engine);

// One line of the file, and back: false for a line that is not one (a
// torn or foreign line is skipped, not trusted).
std::string line_of(const std::string& key, const std::string& engine);
bool parse_line(const std::string& line, std::string* key, std::string* engine);

}  // namespace tuning
}  // namespace cudnn
}  // namespace aotirt
