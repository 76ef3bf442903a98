// cudnn::tuning (cudnn_tuning.h): the switch and the choices' file. Host
// code only; the measuring itself is in cudnn_graph.h.

#include "shims/libs/cudnn_tuning.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <set>

namespace aotirt {

void debug_log(const std::string& line);

namespace cudnn {
namespace tuning {
namespace {

std::mutex& file_mutex() {
  static std::mutex* m = new std::mutex();  // never destroyed: shims may run during exit
  return *m;
}

// path -> (key -> engine), each file read once.
std::map<std::string, std::map<std::string, std::string>>& choices() {
  static auto* c = new std::map<std::string, std::map<std::string, std::string>>();
  return *c;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// The folders of `path`, made where missing (as mkdir -p).
bool make_parents(const std::string& path) {
  for (size_t at = path.find('/', 1); at != std::string::npos; at = path.find('/', at + 1)) {
    const std::string folder = path.substr(0, at);
    if (mkdir(folder.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  return true;
}

std::map<std::string, std::string>& loaded(const std::string& path) {
  auto found = choices().find(path);
  if (found != choices().end()) return found->second;
  std::map<std::string, std::string>& table = choices()[path];
  std::ifstream in(path);
  std::string line, key, engine;
  int skipped = 0;
  while (std::getline(in, line)) {
    // A last line with no newline is one being written, or one cut short
    // (its engine's name could read as another's): never read.
    const bool whole = !in.eof();
    if (whole && parse_line(line, &key, &engine))
      table[key] = engine;
    else
      ++skipped;
  }
  if (skipped) debug_log("cuDNN tuning: " + std::to_string(skipped) + " unreadable line(s) in " + path + " skipped");
  return table;
}

}  // namespace

Mode mode_of(const char* text) {
  if (!text) return Mode::kOff;
  if (std::strcmp(text, "1") == 0) return Mode::kListed;
  if (std::strcmp(text, "wide") == 0) return Mode::kWide;
  return Mode::kOff;
}

Mode mode() {
  static const Mode chosen = [] {
    const char* text = std::getenv("AOTIRT_CUDNN_TUNE");
    const Mode m = mode_of(text);
    if (text && *text && m == Mode::kOff && std::strcmp(text, "0") != 0)
      debug_log(std::string("AOTIRT_CUDNN_TUNE=") + text + " is neither 1 nor wide: cuDNN's heuristics choose");
    return m;
  }();
  return chosen;
}

std::string file_for(int sm_version, size_t version, Mode tuning_mode) {
  const char* cache = std::getenv("AOTIRT_CACHE");
  const char* home = std::getenv("HOME");
  const std::string root = cache && *cache ? cache : std::string(home && *home ? home : "/tmp") + "/.cache/aotirt";
  return root + "/cudnn-tuned-" + (tuning_mode == Mode::kWide ? "wide-" : "") + "v" + std::to_string(kFileVersion) +
         "-sm" + std::to_string(sm_version) + "-cudnn" + std::to_string(version) + ".tsv";
}

std::string line_of(const std::string& key, const std::string& engine) {
  static const char* const digits = "0123456789abcdef";
  std::string line;
  line.reserve(key.size() * 2 + engine.size() + 1);
  for (unsigned char c : key) {
    line += digits[c >> 4];
    line += digits[c & 15];
  }
  return line + "\t" + engine;
}

bool parse_line(const std::string& line, std::string* key, std::string* engine) {
  const size_t tab = line.find('\t');
  if (tab == std::string::npos || tab == 0 || tab % 2 || tab + 1 == line.size()) return false;
  std::string bytes;
  for (size_t i = 0; i < tab; i += 2) {
    const int high = hex_value(line[i]), low = hex_value(line[i + 1]);
    if (high < 0 || low < 0) return false;
    bytes += static_cast<char>(high << 4 | low);
  }
  const std::string name = line.substr(tab + 1);
  for (char c : name)
    if (static_cast<unsigned char>(c) < 0x20) return false;
  *key = bytes;
  *engine = name;
  return true;
}

int choose_plan(const std::vector<double>& times, int heuristic, double margin) {
  const int n = static_cast<int>(times.size());
  auto usable = [&](int i) { return times[i] >= 0 && times[i] <= std::numeric_limits<double>::max(); };  // NaN fails both
  int fastest = -1;
  for (int i = 0; i < n; ++i)
    if (usable(i) && (fastest < 0 || times[i] < times[fastest])) fastest = i;
  if (heuristic < 0 || heuristic >= n || !usable(heuristic)) return fastest;
  // Strictly faster by more than the margin: a tie or a win within the
  // noise keeps the heuristics' engine.
  return times[fastest] < times[heuristic] * (1 - margin) ? fastest : heuristic;
}

std::vector<int> finalists(const std::vector<double>& times, int heuristic, int count) {
  const int n = static_cast<int>(times.size());
  auto usable = [&](int i) { return times[i] >= 0 && times[i] <= std::numeric_limits<double>::max(); };
  std::vector<int> others;
  for (int i = 0; i < n; ++i)
    if (i != heuristic && usable(i)) others.push_back(i);
  std::stable_sort(others.begin(), others.end(), [&](int a, int b) { return times[a] < times[b]; });
  if (static_cast<int>(others.size()) > count) others.resize(count > 0 ? count : 0);
  if (heuristic >= 0 && heuristic < n && usable(heuristic)) others.push_back(heuristic);
  std::sort(others.begin(), others.end());
  return others;
}

std::string tag_of(const EngineConfig& config) {
  std::string tag = "eng" + std::to_string(config.engine);
  for (const auto& knob : config.knobs) tag += "_k" + std::to_string(knob.first) + "=" + std::to_string(knob.second);
  return tag;
}

namespace {
// A decimal integer (a leading '-' allowed) at `at`, moving `at` past it.
bool read_integer(const std::string& text, size_t* at, int64_t* out) {
  size_t i = *at;
  const bool negative = i < text.size() && text[i] == '-';
  if (negative) ++i;
  const size_t digits = i;
  int64_t value = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (value > (std::numeric_limits<int64_t>::max() - (text[i] - '0')) / 10) return false;
    value = value * 10 + (text[i] - '0');
  }
  if (i == digits) return false;
  *out = negative ? -value : value;
  *at = i;
  return true;
}
}  // namespace

bool parse_tag(const std::string& tag, EngineConfig* out) {
  EngineConfig config;
  size_t at = 3;
  if (tag.compare(0, 3, "eng") != 0 || !read_integer(tag, &at, &config.engine) || config.engine < 0) return false;
  while (at < tag.size()) {
    int64_t type = 0, value = 0;
    if (tag.compare(at, 2, "_k") != 0) return false;
    at += 2;
    if (!read_integer(tag, &at, &type) || at >= tag.size() || tag[at] != '=') return false;
    ++at;
    if (!read_integer(tag, &at, &value)) return false;
    if (!config.knobs.empty() && type <= config.knobs.back().first) return false;  // a tag lists each once, in order
    config.knobs.emplace_back(type, value);
  }
  *out = std::move(config);
  return true;
}

std::vector<EngineConfig> knob_neighbours(const std::vector<EngineConfig>& bases,
                                          const std::function<const std::vector<KnobRange>*(int64_t)>& ranges,
                                          size_t cap) {
  // Per base and knob, the values to try, nearest the base's first.
  struct Walk {
    size_t base, knob;
    std::vector<int64_t> values;
  };
  std::vector<Walk> walks;
  for (size_t b = 0; b < bases.size(); ++b) {
    const std::vector<KnobRange>* known = ranges(bases[b].engine);
    if (!known) continue;
    for (size_t k = 0; k < bases[b].knobs.size(); ++k) {
      const auto& [type, value] = bases[b].knobs[k];
      auto range = std::find_if(known->begin(), known->end(), [&](const KnobRange& r) { return r.type == type; });
      if (range == known->end() || range->max < range->min) continue;
      // The grid min, min + stride, ... <= max, as points 0..last; walked
      // outwards from the base's value (which need not lie on it).
      const uint64_t stride = range->stride > 0 ? static_cast<uint64_t>(range->stride) : 1;
      const uint64_t last = (static_cast<uint64_t>(range->max) - static_cast<uint64_t>(range->min)) / stride;
      auto point = [&](uint64_t i) { return static_cast<int64_t>(static_cast<uint64_t>(range->min) + i * stride); };
      int64_t below = -1;  // the nearest point under the base's value, -1 for none
      uint64_t above = 0;  // the nearest point over it
      if (value >= range->min) {
        const uint64_t floor = (static_cast<uint64_t>(value) - static_cast<uint64_t>(range->min)) / stride;
        const uint64_t nearest = floor < last ? floor : last;  // past max: the last point is under the value
        below = static_cast<int64_t>(nearest) - (point(nearest) == value ? 1 : 0);  // the base's own value is no neighbour
        above = floor + 1;
      }
      Walk walk{b, k, {}};
      while (walk.values.size() < static_cast<size_t>(kValuesPerKnob) && (below >= 0 || above <= last)) {
        if (below >= 0) walk.values.push_back(point(static_cast<uint64_t>(below--)));
        if (above <= last && walk.values.size() < static_cast<size_t>(kValuesPerKnob))
          walk.values.push_back(point(above++));
      }
      if (!walk.values.empty()) walks.push_back(std::move(walk));
    }
  }
  std::set<std::string> seen;
  for (const EngineConfig& base : bases) seen.insert(tag_of(base));
  std::vector<EngineConfig> out;
  for (size_t round = 0; round < static_cast<size_t>(kValuesPerKnob); ++round) {
    for (const Walk& walk : walks) {
      if (out.size() >= cap) return out;
      if (round >= walk.values.size()) continue;
      EngineConfig neighbour = bases[walk.base];
      neighbour.knobs[walk.knob].second = walk.values[round];
      if (seen.insert(tag_of(neighbour)).second) out.push_back(std::move(neighbour));
    }
  }
  return out;
}

std::string recorded(const std::string& path, const std::string& key) {
  std::lock_guard<std::mutex> lock(file_mutex());
  const auto& table = loaded(path);
  auto found = table.find(key);
  return found == table.end() ? std::string() : found->second;
}

void record(const std::string& path, const std::string& key, const std::string& engine) {
  std::string parsed_key, parsed_engine;
  const std::string line = line_of(key, engine);
  if (!parse_line(line, &parsed_key, &parsed_engine)) return;  // a name the file cannot hold: kept nowhere
  std::lock_guard<std::mutex> lock(file_mutex());
  loaded(path)[key] = engine;
  // One short append per choice: processes that tune at once add whole lines.
  bool written = false;
  if (make_parents(path)) {
    if (FILE* f = std::fopen(path.c_str(), "a+")) {
      // A process that died mid-write leaves a last line with no newline.
      // A tab makes it unreadable for good (parse_line takes no control
      // character in a name) and a newline ends it, so that this line is
      // read as itself.
      const bool cut_short = std::fseek(f, -1, SEEK_END) == 0 && std::fgetc(f) != '\n';
      std::fseek(f, 0, SEEK_END);  // C's rule between reading and writing one stream
      written = std::fputs(((cut_short ? "\t\n" : "") + line + "\n").c_str(), f) >= 0;
      written = std::fclose(f) == 0 && written;
    }
  }
  if (!written)
    debug_log("cuDNN tuning: could not write " + path + " (" + std::strerror(errno) +
              "): the choice holds for this process only");
}

}  // namespace tuning
}  // namespace cudnn
}  // namespace aotirt
