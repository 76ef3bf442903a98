// cudnn::tuning (cudnn_tuning.h): the switch and the choices' file. Host
// code only; the measuring itself is in cudnn_graph.h.

#include "shims/libs/cudnn_tuning.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>

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
    if (parse_line(line, &key, &engine))
      table[key] = engine;
    else
      ++skipped;
  }
  if (skipped) debug_log("cuDNN tuning: " + std::to_string(skipped) + " unreadable line(s) in " + path + " skipped");
  return table;
}

}  // namespace

bool enabled() {
  static const bool on = [] {
    const char* text = std::getenv("AOTIRT_CUDNN_TUNE");
    return text && std::strcmp(text, "1") == 0;
  }();
  return on;
}

std::string file_for(int sm_version, size_t version) {
  const char* cache = std::getenv("AOTIRT_CACHE");
  const char* home = std::getenv("HOME");
  const std::string root = cache && *cache ? cache : std::string(home && *home ? home : "/tmp") + "/.cache/aotirt";
  return root + "/cudnn-tuned-v" + std::to_string(kFileVersion) + "-sm" + std::to_string(sm_version) + "-cudnn" +
         std::to_string(version) + ".tsv";
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
    if (FILE* f = std::fopen(path.c_str(), "a")) {
      written = std::fputs((line + "\n").c_str(), f) >= 0;
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
