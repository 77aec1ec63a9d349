// `ptprof diff` as a table in report's layout (right-aligned columns, two
// spaces apart, dashed separators) or as JSON.
#include <algorithm>
#include <cstdlib>

#include "ptprof/analysis/diff.hpp"
#include "ptprof/analysis/report_format.hpp"
#include "report/text_util.hpp"

namespace ptprof::diff {

using report::detail::append_right;
using report::detail::json_string;
using report::detail::utf8_length;
using report::detail::utf8_prefix;

namespace {

constexpr size_t kWidth = 12;
constexpr size_t kMaxNameWidth = 55;

std::string time(int64_t ns) { return report::format_time_us(double(ns) / 1000.0); }

std::string signed_time(int64_t ns) { return (ns > 0 ? "+" : ns < 0 ? "-" : "") + time(std::llabs(ns)); }

std::string signed_int(int64_t v) { return (v > 0 ? "+" : "") + std::to_string(v); }

std::string status(const Row& r) { return r.in_a && r.in_b ? "" : r.in_a ? "removed" : "added"; }

size_t shown(const Diff& d, size_t row_limit) { return row_limit ? std::min(row_limit, d.rows.size()) : d.rows.size(); }

std::string drops(const Diff& d) {
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
  name_width = std::min(name_width + 4, kMaxNameWidth);
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
  std::string out = sep + line("Name", kTitles) + sep;
  for (size_t i = 0; i < n; ++i) {
    const Row& r = d.rows[i];
    out +=
        line(r.name, {std::to_string(r.a.count), std::to_string(r.b.count), signed_int(r.delta_calls()),
                      time(r.a.self_cpu_ns), time(r.b.self_cpu_ns), signed_time(r.delta_self_cpu_ns()),
                      time(r.a.cpu_total_ns), time(r.b.cpu_total_ns), signed_time(r.delta_cpu_total_ns()), status(r)});
  }
  out += sep;
  out += "Self CPU time total: A " + time(d.self_cpu_total_a_ns) + ", B " + time(d.self_cpu_total_b_ns) + " (" +
         signed_time(d.self_cpu_total_b_ns - d.self_cpu_total_a_ns) + ")\n";
  if (n < d.rows.size())
    out += std::to_string(d.rows.size() - n) + " more names changed less (--row-limit 0 shows all)\n";
  return out + drops(d);
}

std::string render_json(const Diff& d, size_t row_limit) {
  auto us = [](int64_t ns) { return report::detail::fixed(double(ns) / 1000.0, 3); };
  std::string out = "{\"self_cpu_time_total_us\": {\"a\": " + us(d.self_cpu_total_a_ns) +
                    ", \"b\": " + us(d.self_cpu_total_b_ns) + "}, \"dropped\": {\"a\": " + std::to_string(d.dropped_a) +
                    ", \"b\": " + std::to_string(d.dropped_b) + "}, \"rows\": [";
  size_t n = shown(d, row_limit);
  for (size_t i = 0; i < n; ++i) {
    const Row& r = d.rows[i];
    out += i ? ",\n  " : "\n  ";
    out += "{\"name\": " + json_string(r.name) + ", \"change\": " + json_string(status(r)) +
           ", \"calls_a\": " + std::to_string(r.a.count) + ", \"calls_b\": " + std::to_string(r.b.count) +
           ", \"self_cpu_us_a\": " + us(r.a.self_cpu_ns) + ", \"self_cpu_us_b\": " + us(r.b.self_cpu_ns) +
           ", \"cpu_total_us_a\": " + us(r.a.cpu_total_ns) + ", \"cpu_total_us_b\": " + us(r.b.cpu_total_ns) + "}";
  }
  return out + "\n]}\n";
}

}  // namespace ptprof::diff
