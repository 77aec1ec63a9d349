#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "ptprof/analysis/diff.hpp"

namespace ptprof::diff {

const std::vector<std::string_view>& sort_key_names() {
  static const std::vector<std::string_view> kNames{"self_cpu_time_total", "cpu_time_total", "count"};
  return kNames;
}

std::optional<SortKey> parse_sort_key(std::string_view name) {
  const auto& names = sort_key_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return SortKey(i);
  return std::nullopt;
}

namespace {

double change(const Row& r, SortKey key) {
  switch (key) {
    case SortKey::SelfCpuTime:
      return std::fabs(r.self_cpu_b_ns() - r.self_cpu_a_ns());
    case SortKey::CpuTimeTotal:
      return std::fabs(r.cpu_total_b_ns() - r.cpu_total_a_ns());
    case SortKey::Count:
      return std::fabs(r.calls_b() - r.calls_a());
  }
  return 0;
}

// Distinct step numbers: a step of a DDP job runs on every rank once.
uint64_t steps_of(const report::Report& r) {
  std::set<uint64_t> steps;
  for (const report::StepRow& s : r.steps)
    if (s.role == report::StepRow::Role::Step) steps.insert(s.step);
  return steps.size();
}

void merge_text(std::string& into, const std::string& text) {
  if (into.empty()) {
    into = text;
  } else if (into != text && into.find(" | " + text) == std::string::npos && !into.starts_with(text + " | ")) {
    into += " | " + text;
  }
}

std::string shown(const std::string& s) { return s.empty() ? "none" : s; }

std::vector<std::string> differences(const SideInfo& a, const SideInfo& b) {
  std::vector<std::string> out;
  if (a.schedule != b.schedule)
    out.push_back("the schedules differ (A: " + shown(a.schedule) + "; B: " + shown(b.schedule) + ")");
  if (a.ptprof_version != b.ptprof_version)
    out.push_back("recorded by different ptprof versions (A: " + shown(a.ptprof_version) +
                  "; B: " + shown(b.ptprof_version) + ")");
  auto option = [&](bool x, bool y, const char* what) {
    if (x != y)
      out.push_back(std::string("only ") + (x ? "A" : "B") + " was recorded with " + what +
                    ", which costs time in every op it records");
  };
  option(a.shapes, b.shapes, "input shapes (--record-shapes)");
  option(a.stacks, b.stacks, "call stacks (--with-stack or --python-attribution)");
  option(a.memory, b.memory, "memory events (--profile-memory)");
  return out;
}

}  // namespace

void note_trace(SideInfo& side, const trace::Trace& t) {
  merge_text(side.schedule, t.header.schedule);
  merge_text(side.ptprof_version, t.header.ptprof_version);
  side.stacks |= !t.stacks.empty();
  for (const trace::Event& e : t.events) {
    side.shapes |= e.kind == trace::EventKind::Op && e.shapes != 0;
    side.memory |= e.kind == trace::EventKind::Memory;
  }
}

Diff compare(const report::Report& a, const report::Report& b, SortKey sort_by, const SideInfo& info_a,
             const SideInfo& info_b) {
  Diff d = compare(a, b, sort_by);
  d.warnings = differences(info_a, info_b);
  return d;
}

Diff compare(const report::Report& a, const report::Report& b, SortKey sort_by) {
  Diff d;
  std::map<std::string, size_t> index;
  auto row_for = [&](const std::string& name) -> Row& {
    auto [it, added] = index.try_emplace(name, d.rows.size());
    if (added) d.rows.push_back(Row{name, {}, {}});
    return d.rows[it->second];
  };
  for (const report::Row& r : a.rows) {
    Row& row = row_for(r.name);
    row.a = r.stats;
    row.in_a = true;
  }
  for (const report::Row& r : b.rows) {
    Row& row = row_for(r.name);
    row.b = r.stats;
    row.in_b = true;
  }
  d.steps_a = steps_of(a);
  d.steps_b = steps_of(b);
  d.per_step = d.steps_a && d.steps_b && d.steps_a != d.steps_b;
  if (d.per_step)
    for (Row& r : d.rows) {
      r.per_a = double(d.steps_a);
      r.per_b = double(d.steps_b);
    }
  // Stable: equal changes keep the order of first appearance (A's order).
  std::stable_sort(d.rows.begin(), d.rows.end(),
                   [&](const Row& x, const Row& y) { return change(x, sort_by) > change(y, sort_by); });
  d.self_cpu_total_a_ns = a.self_cpu_total_ns;
  d.self_cpu_total_b_ns = b.self_cpu_total_ns;
  d.dropped_a = a.dropped;
  d.dropped_b = b.dropped;
  return d;
}

}  // namespace ptprof::diff
