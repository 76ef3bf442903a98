// What the host checks (tests/shims/*_check.cpp, built and run by
// support.helpers.run_host_check) share: a check that counts, and the last
// line that run_host_check reads ("N checks, M failures").
#pragma once

#include <cstdio>
#include <string>

namespace host_check {

inline int checks = 0, failures = 0;

// Counts a check; a failed one is printed (the first 20: a broken formula
// can fail thousands), naming what was expected.
inline void expect(bool ok, const std::string& what) {
  ++checks;
  if (ok) return;
  if (++failures <= 20) std::printf("FAILED: %s\n", what.c_str());
}

// Prints the counts and gives main's exit status.
inline int finish() {
  std::printf("%d checks, %d failures\n", checks, failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace host_check
