// Two runs compared operator by operator, as Holistic Trace Analysis' trace
// diff compares two traces: per name, the calls and times of each side and
// how they changed, the biggest changes first. Built from two Reports (the
// key_averages() rows of each side), so names, folding and self times are
// the report's.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptprof/analysis/report.hpp"

namespace ptprof::diff {

enum class SortKey : uint8_t { SelfCpuTime, CpuTimeTotal, Count };
std::optional<SortKey> parse_sort_key(std::string_view name);
const std::vector<std::string_view>& sort_key_names();

struct Row {
  std::string name;
  report::Stats a, b;  // zero on the side where the name does not occur; totals, as recorded
  bool in_a = false, in_b = false;
  // What each side's totals are divided by to compare them: its steps when
  // the two sides recorded different numbers of steps (Diff::per_step), else 1.
  double per_a = 1.0, per_b = 1.0;

  int64_t delta_calls() const { return int64_t(b.count) - int64_t(a.count); }
  int64_t delta_self_cpu_ns() const { return b.self_cpu_ns - a.self_cpu_ns; }
  int64_t delta_cpu_total_ns() const { return b.cpu_total_ns - a.cpu_total_ns; }

  // The compared values: totals, or per-step averages.
  double calls_a() const { return double(a.count) / per_a; }
  double calls_b() const { return double(b.count) / per_b; }
  double self_cpu_a_ns() const { return double(a.self_cpu_ns) / per_a; }
  double self_cpu_b_ns() const { return double(b.self_cpu_ns) / per_b; }
  double cpu_total_a_ns() const { return double(a.cpu_total_ns) / per_a; }
  double cpu_total_b_ns() const { return double(b.cpu_total_ns) / per_b; }
};

struct Diff {
  std::vector<Row> rows;  // by the size of the change in the sort key, largest first
  int64_t self_cpu_total_a_ns = 0, self_cpu_total_b_ns = 0;
  uint64_t dropped_a = 0, dropped_b = 0;
  // Steps each side recorded (distinct step numbers); per_step when both
  // have steps and their numbers differ: every value compared is then a
  // per-step average, so that a longer run does not show every operator as
  // changed.
  uint64_t steps_a = 0, steps_b = 0;
  bool per_step = false;
  // How the two recordings differ in what they recorded (schedule, ptprof
  // version, options inferred from what the traces hold): each a sentence.
  std::vector<std::string> warnings;
};

// What a diff needs to know of a side besides its report.
struct SideInfo {
  std::string schedule;        // the traces' schedules, "" for none; "a | b" when they differ
  std::string ptprof_version;  // likewise
  bool shapes = false;         // some op carries input shapes (--record-shapes)
  bool stacks = false;         // some op carries a call stack (--with-stack, --python-attribution)
  bool memory = false;         // memory events (--profile-memory)
};

// The side's information from its traces, as read.
void note_trace(SideInfo& side, const trace::Trace& t);

// compare() and, from the sides' information, the warnings.
Diff compare(const report::Report& a, const report::Report& b, SortKey sort_by, const SideInfo& info_a,
             const SideInfo& info_b);

Diff compare(const report::Report& a, const report::Report& b, SortKey sort_by);

// row_limit 0 = every row.
std::string render_table(const Diff& d, size_t row_limit);
std::string render_json(const Diff& d, size_t row_limit);

}  // namespace ptprof::diff
