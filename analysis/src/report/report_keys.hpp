// How events become key_averages() keys: names torch never reports, and the
// keys of steps. Shared by the full and the streaming computations.
#pragma once
#include <algorithm>
#include <array>
#include <string_view>

#include "ptprof/trace.hpp"

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

// A script that runs torch.profiler itself under ptprof: its prof.step()'s
// record_function("ProfilerStep#N") is torch's annotation, not the program's
// work and not ptprof's step (torch 1.13 records it as a user scope, which
// doubled ProfilerStep*): left out as torch's own profiler:: events are.
// Filter bits per name: always, or unless the event is one of ptprof's
// Step spans, which carry the same name.
// ptprof's Python bootstrap's notes on torch.compile ("torch.compile: recompile
// [0/1]: <reason>", report_compile.hpp) are the compile section's lines, not
// rows: one per reason would fill the table.
constexpr std::string_view kCompileNotePrefix = "torch.compile: ";
enum FilterBits : uint8_t { kFilteredAlways = 1, kFilteredUnlessStep = 2 };
inline uint8_t filter_bits(std::string_view name) {
  if (is_filtered(name) || name.substr(0, kCompileNotePrefix.size()) == kCompileNotePrefix) return kFilteredAlways;
  return name.substr(0, kStepPrefix.size()) == kStepPrefix ? kFilteredUnlessStep : 0;
}
inline bool filtered_out(uint8_t bits, trace::EventKind kind) {
  return (bits & kFilteredAlways) != 0 || ((bits & kFilteredUnlessStep) != 0 && kind != trace::EventKind::Step);
}

// ProfilerStep#N is keyed ProfilerStep*.
inline std::string_view key_name(std::string_view name) {
  return name.substr(0, kStepPrefix.size()) == kStepPrefix ? kStepKey : name;
}

}  // namespace ptprof::report::detail
