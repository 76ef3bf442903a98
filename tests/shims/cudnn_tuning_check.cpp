// Host-only check of cuda_src/shims/libs/cudnn_tuning.cpp (the file of cuDNN's
// measured choices), built with it and run by tests/shims/test_cudnn_tuning.py
// (no GPU, no cuDNN):
//   cudnn_tuning_check lines             the line format, round trips and refusals
//   cudnn_tuning_check write PATH KEY ENGINE    records a choice
//   cudnn_tuning_check read PATH KEY     prints the engine recorded (a new process reads the file)
//   cudnn_tuning_check path SM VERSION   prints file_for(SM, VERSION)

#include <cstdio>
#include <cstdlib>
#include <string>

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

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "lines") return check_lines();
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
  std::fprintf(stderr, "usage: cudnn_tuning_check lines | write PATH KEY ENGINE | read PATH KEY | path SM VERSION\n");
  return 2;
}
