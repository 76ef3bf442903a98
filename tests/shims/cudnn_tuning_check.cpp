// Host-only check of cuda_src/shims/libs/cudnn_tuning.cpp (the file of cuDNN's
// measured choices), built with it and run by tests/shims/test_cudnn_tuning.py
// (no GPU, no cuDNN):
//   cudnn_tuning_check lines             the line format, round trips and refusals
//   cudnn_tuning_check choose            choose_plan's margin rule
//   cudnn_tuning_check write PATH KEY ENGINE    records a choice
//   cudnn_tuning_check read PATH KEY     prints the engine recorded (a new process reads the file)
//   cudnn_tuning_check path SM VERSION [MODE]   prints file_for(SM, VERSION, mode_of(MODE))
//   cudnn_tuning_check tags              plan names to configurations and back
//   cudnn_tuning_check neighbours        knob_neighbours' choice and order
//   cudnn_tuning_check mode [TEXT]       prints mode_of(TEXT): off, listed or wide

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
  using p = std::vector<int>;
  expect(tuning::finalists(v{10, 4, 7, 5, 12, 6}, 0, 3) == p{0, 1, 3, 5}, "the heuristics' and the 3 fastest others");
  expect(tuning::finalists(v{10, 4, 7, 5, 12, 6}, 1, 3) == p{1, 2, 3, 5}, "the heuristics' may be the fastest");
  expect(tuning::finalists(v{10, 4, 7}, 0, 3) == p{0, 1, 2}, "fewer than the count: all");
  expect(tuning::finalists(v{nan, 4, inf, -1, 6}, 0, 3) == p{1, 4}, "unusable times are never finalists");
  expect(tuning::finalists(v{3, 4, 5}, -1, 2) == p{0, 1}, "without the heuristics' engine: the fastest");
  expect(tuning::finalists(v{5, 4, 4, 4}, 0, 2) == p{0, 1, 2}, "ties: the earlier listed first");
  expect(tuning::finalists(v{}, 0, 3).empty(), "nothing measured: none");
  std::printf("%d failures\n", failures);
  return failures ? 1 : 0;
}

int check_tags() {
  tuning::EngineConfig c;
  expect(tuning::parse_tag("eng12_k2=3_k5=1", &c) && c.engine == 12 && c.knobs.size() == 2 && c.knobs[0].first == 2 &&
             c.knobs[0].second == 3 && c.knobs[1].first == 5 && c.knobs[1].second == 1,
         "a tag parses to its engine and knobs");
  expect(tuning::tag_of(c) == "eng12_k2=3_k5=1", "and back");
  expect(tuning::parse_tag("eng0", &c) && c.engine == 0 && c.knobs.empty() && tuning::tag_of(c) == "eng0",
         "an engine without knobs");
  expect(tuning::parse_tag("eng7_k3=-1", &c) && c.knobs[0].second == -1, "a negative knob value");
  const char* bad[] = {"", "eng", "engx", "eng-1", "eng3_", "eng3_k", "eng3_k2", "eng3_k2=", "eng3_k2=1_",
                       "eng3_k5=1_k2=1", "eng3_k2=1_k2=2", "eng3 (tuned)", "eng99999999999999999999", "xeng3"};
  for (const char* text : bad) expect(!tuning::parse_tag(text, &c), text);
  std::printf("%d failures\n", failures);
  return failures ? 1 : 0;
}

std::string listed(const std::vector<tuning::EngineConfig>& configs) {
  std::string out;
  for (const auto& c : configs) out += (out.empty() ? "" : " ") + tuning::tag_of(c);
  return out;
}

int check_neighbours() {
  using tuning::EngineConfig;
  using tuning::KnobRange;
  // Engine 1: knob 2 in 0..8 (stride 2), knob 5 in 0..1. Engine 4: knob 3 in 1..3. Engine 9: no ranges known.
  const std::vector<KnobRange> one{{2, 0, 8, 2}, {5, 0, 1, 1}}, four{{3, 1, 3, 1}};
  auto ranges = [&](int64_t engine) -> const std::vector<KnobRange>* {
    return engine == 1 ? &one : engine == 4 ? &four : nullptr;
  };
  EngineConfig a{1, {{2, 4}, {5, 0}}}, b{4, {{3, 1}}}, c{9, {{2, 1}}};
  // Round 1: each knob's nearest other value (knob 2 of a: 2, below first), round 2 the next...
  expect(listed(tuning::knob_neighbours({a, b, c}, ranges, 100)) ==
             "eng1_k2=2_k5=0 eng1_k2=4_k5=1 eng4_k3=2 eng1_k2=6_k5=0 eng4_k3=3 eng1_k2=0_k5=0 eng1_k2=8_k5=0",
         "rounds of nearest values, across bases and knobs; none for an engine without ranges");
  expect(listed(tuning::knob_neighbours({a, b, c}, ranges, 3)) == "eng1_k2=2_k5=0 eng1_k2=4_k5=1 eng4_k3=2",
         "the cap keeps the first rounds");
  // A value between the grid's points, under its first and past its last; a knob the engine has no range for.
  EngineConfig off{1, {{2, 3}}}, under{1, {{2, -5}}}, over{1, {{2, 20}}}, unknown{1, {{7, 0}}};
  expect(listed(tuning::knob_neighbours({off}, ranges, 100)) ==
             "eng1_k2=2 eng1_k2=4 eng1_k2=0 eng1_k2=6 eng1_k2=8", "between points: both sides, nearest first");
  expect(listed(tuning::knob_neighbours({under}, ranges, 100)) == "eng1_k2=0 eng1_k2=2 eng1_k2=4 eng1_k2=6 eng1_k2=8",
         "under the range: from its start");
  expect(listed(tuning::knob_neighbours({over}, ranges, 100)) == "eng1_k2=8 eng1_k2=6 eng1_k2=4 eng1_k2=2 eng1_k2=0",
         "past the range: from its end");
  expect(tuning::knob_neighbours({unknown}, ranges, 100).empty(), "a knob without a range is left as it is");
  // A neighbour that is another base, or one reached from two bases, comes once and never as a base.
  EngineConfig d{4, {{3, 2}}};
  expect(listed(tuning::knob_neighbours({b, d}, ranges, 100)) == "eng4_k3=3",
         "neither bases nor repeats");
  // At most kValuesPerKnob values a knob, however wide its range.
  const std::vector<KnobRange> wide{{2, 0, std::numeric_limits<int64_t>::max(), 1}};
  auto wide_ranges = [&](int64_t) -> const std::vector<KnobRange>* { return &wide; };
  expect(tuning::knob_neighbours({EngineConfig{1, {{2, 100}}}}, wide_ranges, 1000).size() ==
             static_cast<size_t>(tuning::kValuesPerKnob),
         "a wide range gives kValuesPerKnob values");
  expect(listed(tuning::knob_neighbours({EngineConfig{1, {{2, 100}}}}, wide_ranges, 4)) ==
             "eng1_k2=99 eng1_k2=101 eng1_k2=98 eng1_k2=102", "nearest first, below then above");
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
  if (mode == "path" && (argc == 4 || argc == 5)) {
    const tuning::Mode m = tuning::mode_of(argc == 5 ? argv[4] : "1");
    std::printf("%s\n", tuning::file_for(std::atoi(argv[2]), std::strtoul(argv[3], nullptr, 10), m).c_str());
    return 0;
  }
  if (mode == "tags") return check_tags();
  if (mode == "neighbours") return check_neighbours();
  if (mode == "mode" && argc <= 3) {
    const tuning::Mode m = tuning::mode_of(argc == 3 ? argv[2] : nullptr);
    std::printf("%s\n", m == tuning::Mode::kOff ? "off" : m == tuning::Mode::kListed ? "listed" : "wide");
    return 0;
  }
  std::fprintf(stderr,
               "usage: cudnn_tuning_check lines | choose | tags | neighbours | write PATH KEY ENGINE | "
               "read PATH KEY | path SM VERSION [MODE] | mode [TEXT]\n");
  return 2;
}
