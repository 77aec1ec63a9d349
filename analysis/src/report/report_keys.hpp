// How events become key_averages() keys: names torch never reports, and the
// keys of steps. Shared by the full and the streaming computations.
#pragma once
#include <algorithm>
#include <array>
#include <string_view>

namespace ptprof::report::detail {

// torch's _filter_name: profiler helpers that never become events, so their
// time stays in their parent's self time.
constexpr std::array<std::string_view, 8> kFilteredNames = {
    "[memory]",
    "[OutOfMemory]",
    "profiler::_record_function_enter",
    "profiler::_record_function_enter_new",
    "profiler::_record_function_exit",
    "aten::is_leaf",
    "aten::output_nr",
    "aten::_version",
};

constexpr std::string_view kMemoryEventName = "[memory]";
constexpr std::string_view kStepPrefix = "ProfilerStep#";
constexpr std::string_view kStepKey = "ProfilerStep*";
constexpr std::string_view kNoShapes = "[]";

inline bool is_filtered(std::string_view name) {
  return std::find(kFilteredNames.begin(), kFilteredNames.end(), name) != kFilteredNames.end();
}

// ProfilerStep#N is keyed ProfilerStep*.
inline std::string_view key_name(std::string_view name) {
  return name.substr(0, kStepPrefix.size()) == kStepPrefix ? kStepKey : name;
}

}  // namespace ptprof::report::detail
