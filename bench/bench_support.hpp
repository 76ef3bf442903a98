// Header-only helpers for aotirt's C benchmark harness: timing, medians and
// one JSON object per line, with the same field names as bench/bench.py so C
// and Python figures compare one to one.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "aotirt/aotirt.h"

namespace bench {

// Timed repetitions behind each median (after warm-up); --reps sets it.
inline int repetitions = 7;

inline double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Median over `repetitions` of `measure()`, each returning one figure.
inline double median_of(const std::function<double()>& measure) {
  std::vector<double> values;
  for (int i = 0; i < repetitions; ++i) values.push_back(measure());
  return median(values);
}

// One JSON object: string fields quoted, numbers as they are.
class Record {
 public:
  Record& text(const std::string& key, const std::string& value) {
    fields_[key] = "\"" + value + "\"";
    return *this;
  }
  Record& number(const std::string& key, double value) {
    // Whole numbers (byte counts, calls) in full: %g would print 64 MiB as
    // 67108900. Measurements keep six significant digits.
    char buffer[64];
    // (The range test comes first: converting NaN or a huge value to an
    // integer is undefined.)
    const bool whole =
        value > -9.0e15 && value < 9.0e15 && value == static_cast<double>(static_cast<long long>(value));
    std::snprintf(buffer, sizeof buffer, whole ? "%.0f" : "%.6g", value);
    fields_[key] = buffer;
    return *this;
  }
  void emit() const {
    std::string line = "{";
    for (const auto& [key, value] : fields_) line += (line.size() > 1 ? ", \"" : "\"") + key + "\": " + value;
    std::printf("%s}\n", line.c_str());
    std::fflush(stdout);
  }

 private:
  std::map<std::string, std::string> fields_;  // sorted keys, like json.dumps(sort_keys=True)
};

// Exits with the core's message when an aotirt call fails.
inline void check(aotirt_status status, const char* what) {
  if (status == AOTIRT_OK) return;
  std::fprintf(stderr, "aotirt_bench: %s failed: %s\n", what, aotirt_last_error_message());
  std::exit(1);
}

}  // namespace bench
