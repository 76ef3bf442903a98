// Host-only check of cuda_src/shims/libs/cudnn_tuning.cpp (the file of cuDNN's
// measured choices), built with it and run by tests/shims/test_cudnn_tuning.py
// (no GPU, no cuDNN):
//   cudnn_tuning_check lines             the line format, round trips and refusals
//   cudnn_tuning_check choose            choose_plan's margin rule
//   cudnn_tuning_check write PATH KEY ENGINE    records a choice
//   cudnn_tuning_check read PATH KEY     prints the engine recorded (a new process reads the file)
//   cudnn_tuning_check path SM VERSION   prints file_for(SM, VERSION)

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "shims/libs/cudnn_tuning.h"

namespace aotirt {
// The debug log, which cudnn.cpp defines in the library: printed here.
void debug_log(const std::string& line) { std::fprintf(stderr, "log: %s\n", line.c_str()); }
}  // namespace aotirt

namespace tuning = aotirt::cudnn::tuning;

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    ++failures;
    std::printf("FAIL: %s\n", what);
  }
}

int check_lines() {
  const std::string key("conv\0\t\n\xff\x01 x", 11);  // the keys are bytes: zeros, tabs, newlines among them
  const std::string line = tuning::line_of(key, "eng12_k2=3_k5=1");
  expect(line.find('\n') == std::string::npos && line.find('\0') == std::string::npos, "a line holds no newline or zero");
  std::string k, e;
  expect(tuning::parse_line(line, &k, &e) && k == key && e == "eng12_k2=3_k5=1", "a line parses back");
  const char* bad[] = {"", "abcd", "\teng0", "abc\teng0", "zz\teng0", "6162\t", "6162\teng\x01", "6162\teng\r"};
  for (const char* text : bad) expect(!tuning::parse_line(text, &k, &e), "a line that is not one is refused");
  expect(tuning::parse_line("6162\teng0 with spaces", &k, &e) && k == "ab" && e == "eng0 with spaces",
         "an engine name may hold spaces");
  std::printf("%d failures\n", failures);
  return failures ? 1 : 0;
}

int check_choose() {
  using v = std::vector<double>;
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const double m = 0.03;
  expect(tuning::choose_plan(v{10, 9.8, 9.75}, 0, m) == 0, "2.5% faster is noise: the heuristics' engine is kept");
  expect(tuning::choose_plan(v{10, 9.71}, 0, m) == 0, "2.9% faster is noise");
  expect(tuning::choose_plan(v{10, 9.69}, 0, m) == 1, "3.1% faster wins");
  expect(tuning::choose_plan(v{10, 9.7, 5, 6}, 0, m) == 2, "the fastest of those past the margin wins");
  expect(tuning::choose_plan(v{10, 10}, 0, m) == 0, "a tie keeps the heuristics' engine");
  expect(tuning::choose_plan(v{4, 10, 4.1}, 2, m) == 2, "the heuristics' engine need not be the first measured");
  expect(tuning::choose_plan(v{3, 10, 4}, 2, m) == 0, "one faster by more than the margin replaces it anywhere");
  expect(tuning::choose_plan(v{10, 20}, 0, m) == 0, "slower engines are never chosen");
  expect(tuning::choose_plan(v{7, 5, 6}, -1, m) == 1, "without the heuristics' engine: the fastest");
  expect(tuning::choose_plan(v{7, 5, 6}, 3, m) == 1, "a position outside the times: the fastest");
  expect(tuning::choose_plan(v{nan, 5, 6}, 0, m) == 1, "an unreadable heuristics' time: the fastest");
  expect(tuning::choose_plan(v{10, nan, -1, inf, 9.8}, 0, m) == 0, "NaN, negative and infinite times never win");
  expect(tuning::choose_plan(v{nan, -1}, 0, m) == -1, "no usable time: none");
  expect(tuning::choose_plan(v{}, 0, m) == -1, "no engines: none");
  expect(tuning::choose_plan(v{0, 0}, 0, m) == 0, "zero times (below the events' resolution) keep the heuristics'");
  expect(tuning::choose_plan(v{10, 9.8}, 0, 0) == 1, "margin 0: any faster one wins");
  std::printf("%d failures\n", failures);
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "lines") return check_lines();
  if (mode == "choose") return check_choose();
  if (mode == "write" && argc == 5) {
    tuning::record(argv[2], argv[3], argv[4]);
    std::printf("%s\n", tuning::recorded(argv[2], argv[3]).c_str());  // this process: at once
    return 0;
  }
  if (mode == "read" && argc == 4) {
    std::printf("%s\n", tuning::recorded(argv[2], argv[3]).c_str());
    return 0;
  }
  if (mode == "path" && argc == 4) {
    std::printf("%s\n", tuning::file_for(std::atoi(argv[2]), std::strtoul(argv[3], nullptr, 10)).c_str());
    return 0;
  }
  std::fprintf(stderr, "usage: cudnn_tuning_check lines | choose | write PATH KEY ENGINE | read PATH KEY | path SM VERSION\n");
  return 2;
}
