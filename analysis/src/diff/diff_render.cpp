// `ptprof diff` as a table in report's layout (right-aligned columns, two
// spaces apart, dashed separators) or as JSON; per-step averages and the
// recordings' differences first.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "ptprof/analysis/diff.hpp"
#include "ptprof/analysis/report_format.hpp"
#include "text/text_util.hpp"

namespace ptprof::diff {

using text::append_right;
using text::json_string;
using text::utf8_length;
using text::utf8_prefix;

namespace {

constexpr size_t kWidth = 12;
constexpr size_t kMaxDiffNameWidth = 55;

std::string time(double ns) { return report::format_time_us(ns / 1000.0); }

std::string signed_time(double ns) { return (ns > 0 ? "+" : ns < 0 ? "-" : "") + time(std::fabs(ns)); }

// Calls: whole numbers as totals, two decimals as per-step averages.
std::string calls(const Diff& d, double v) {
  return d.per_step ? text::fixed(v, 2) : std::to_string(int64_t(std::llround(v)));
}

std::string signed_calls(const Diff& d, double v) { return (v > 0 ? "+" : "") + calls(d, v); }

// What the table and the JSON say first: whether the values are per-step
// averages, and how the two recordings differ.
std::string heading(const Diff& d) {
  std::string out;
  if (d.per_step)
    out += "Per-step averages: A recorded " + std::to_string(d.steps_a) + " steps, B " + std::to_string(d.steps_b) +
           "; calls and times below are each side's totals divided by its steps.\n";
  for (const std::string& w : d.warnings) out += "WARNING: A and B differ in how they were recorded: " + w + ".\n";
  return out;
}

std::string status(const Row& r) { return r.in_a && r.in_b ? "" : r.in_a ? "removed" : "added"; }

size_t shown(const Diff& d, size_t row_limit) { return row_limit ? std::min(row_limit, d.rows.size()) : d.rows.size(); }

std::string diff_drops(const Diff& d) {
  if (!d.dropped_a && !d.dropped_b) return {};
  return "WARNING: events were dropped (ring full): " + std::to_string(d.dropped_a) + " in A, " +
         std::to_string(d.dropped_b) + " in B; their counts and times are lower than they ran.\n";
}

}  // namespace

std::string render_table(const Diff& d, size_t row_limit) {
  static const std::vector<std::string> kTitles{"Calls A",       "Calls B",      "Calls +/-",   "Self CPU A",
                                                "Self CPU B",    "Self CPU +/-", "CPU total A", "CPU total B",
                                                "CPU total +/-", "Change"};
  size_t n = shown(d, row_limit);
  size_t name_width = utf8_length("Name");
  for (size_t i = 0; i < n; ++i) name_width = std::max(name_width, utf8_length(d.rows[i].name));
  name_width = std::min(name_width + 4, kMaxDiffNameWidth);
  std::string sep(name_width, '-');
  sep += "  ";
  for (size_t i = 0; i < kTitles.size(); ++i) sep += std::string(kWidth, '-') + "  ";
  sep += "\n";
  auto line = [&](const std::string& name, const std::vector<std::string>& cells) {
    std::string s;
    std::string shown_name =
        utf8_length(name) > name_width ? std::string(utf8_prefix(name, name_width - 3)) + "..." : name;
    append_right(s, shown_name, name_width);
    s += "  ";
    for (const auto& c : cells) {
      append_right(s, c, kWidth);
      s += "  ";
    }
    return s + "\n";
  };
  std::string out = heading(d) + sep + line("Name", kTitles) + sep;
  for (size_t i = 0; i < n; ++i) {
    const Row& r = d.rows[i];
    out += line(r.name, {calls(d, r.calls_a()), calls(d, r.calls_b()), signed_calls(d, r.calls_b() - r.calls_a()),
                         time(r.self_cpu_a_ns()), time(r.self_cpu_b_ns()),
                         signed_time(r.self_cpu_b_ns() - r.self_cpu_a_ns()), time(r.cpu_total_a_ns()),
                         time(r.cpu_total_b_ns()), signed_time(r.cpu_total_b_ns() - r.cpu_total_a_ns()), status(r)});
  }
  out += sep;
  const double total_a = double(d.self_cpu_total_a_ns) / (d.per_step ? double(d.steps_a) : 1.0);
  const double total_b = double(d.self_cpu_total_b_ns) / (d.per_step ? double(d.steps_b) : 1.0);
  out += std::string(d.per_step ? "Self CPU time per step: A " : "Self CPU time total: A ") + time(total_a) + ", B " +
         time(total_b) + " (" + signed_time(total_b - total_a) + ")\n";
  if (n < d.rows.size())
    out += std::to_string(d.rows.size() - n) + " more names changed less (--row-limit 0 shows all)\n";
  return out + diff_drops(d);
}

std::string render_json(const Diff& d, size_t row_limit) {
  auto us = [](double ns) { return text::fixed(ns / 1000.0, 3); };
  std::string warnings;
  for (const std::string& w : d.warnings) warnings += (warnings.empty() ? "" : ", ") + json_string(w);
  std::string out = "{\"self_cpu_time_total_us\": {\"a\": " + us(double(d.self_cpu_total_a_ns)) +
                    ", \"b\": " + us(double(d.self_cpu_total_b_ns)) +
                    "}, \"dropped\": {\"a\": " + std::to_string(d.dropped_a) +
                    ", \"b\": " + std::to_string(d.dropped_b) + "}, \"steps\": {\"a\": " + std::to_string(d.steps_a) +
                    ", \"b\": " + std::to_string(d.steps_b) + "}, \"per_step\": " + (d.per_step ? "true" : "false") +
                    ", \"warnings\": [" + warnings + "], \"rows\": [";
  size_t n = shown(d, row_limit);
  for (size_t i = 0; i < n; ++i) {
    const Row& r = d.rows[i];
    out += i ? ",\n  " : "\n  ";
    out += "{\"name\": " + json_string(r.name) + ", \"change\": " + json_string(status(r)) +
           ", \"calls_a\": " + calls(d, r.calls_a()) + ", \"calls_b\": " + calls(d, r.calls_b()) +
           ", \"self_cpu_us_a\": " + us(r.self_cpu_a_ns()) + ", \"self_cpu_us_b\": " + us(r.self_cpu_b_ns()) +
           ", \"cpu_total_us_a\": " + us(r.cpu_total_a_ns()) + ", \"cpu_total_us_b\": " + us(r.cpu_total_b_ns()) + "}";
  }
  return out + "\n]}\n";
}

}  // namespace ptprof::diff
