// PTPROF_SKIP(reason): a test case that cannot run on this machine says why
// and stops. It prints kSkipMarker, which tests/CMakeLists.txt gives CTest as
// the cases' SKIP_REGULAR_EXPRESSION, so CTest reports the case as skipped
// (Not Run), never as passed. With CI set (CI=true; anything but empty, 0,
// false, no, off), where the test command installs everything the suite
// needs, a skip is a failure instead. The Python side is ptproftest.py's.
#pragma once
#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <string>

namespace ptprof::testing {

inline constexpr const char* kSkipMarker = "PTPROF-TEST-SKIPPED: ";

inline bool skips_fail() {
  const char* ci = std::getenv("CI");
  std::string v = ci ? ci : "";
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return !(v.empty() || v == "0" || v == "false" || v == "no" || v == "off");
}

}  // namespace ptprof::testing

// A macro, not a function: it must return from the test case.
#define PTPROF_SKIP(reason)                                                                \
  do {                                                                                     \
    if (::ptprof::testing::skips_fail()) FAIL("CI is set, so a skip fails: " << (reason)); \
    std::cout << ::ptprof::testing::kSkipMarker << (reason) << std::endl;                  \
    return;                                                                                \
  } while (false)
