#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "html/report_html_cells.hpp"
#include "html/report_html_plots.hpp"
#include "html/report_html_tables.hpp"
#include "ptprof/analysis/report_format.hpp"
#include "ptprof/saturating.hpp"
#include "text/text_util.hpp"

namespace ptprof::html::detail {

using report::compile_kind_title;
using report::CompileEventRow;
using report::CompileKind;
using report::CompileNote;
using report::CompileReport;
using report::format_time_us;
using report::kCompileKindCount;
using report::kPhaseCount;
using report::Phase;
using report::phase_title;
using report::Report;
using report::StepCompile;
using report::StepPhases;
using text::fixed;

namespace {

std::string signed_time_cell(int64_t ns) {
  const char* sign = ns > 0 ? "+" : ns < 0 ? "-" : "";
  return "<td data-v=\"" + std::to_string(ns) + "\">" + sign + format_time_us(double(std::llabs(ns)) / 1000.0) +
         "</td>";
}

// Calls: whole numbers, or per-step averages with two decimals.
std::string calls_cell(double v, bool per_step, bool sign = false) {
  if (!per_step) return int_cell(int64_t(std::llround(v)), sign);
  return "<td data-v=\"" + fixed(v, 2) + "\">" + (sign && v > 0 ? "+" : "") + fixed(v, 2) + "</td>";
}

int64_t ns(double v) { return int64_t(std::llround(v)); }

std::string share_text(int64_t part, int64_t whole) {
  return whole > 0 ? " (" + fixed(100.0 * double(part) / double(whole), 2) + "%)" : "";
}

}  // namespace

std::string phase_table(const Report& r) {
  if (r.phases.empty()) return {};
  const bool many_threads = std::any_of(r.phases.begin(), r.phases.end(), [&](const StepPhases& s) {
    return s.pid != r.phases[0].pid || s.tid != r.phases[0].tid;
  });
  std::string out = "<table class=\"ops\" id=\"phases\"><thead><tr><th>Step</th>";
  if (many_threads) out += "<th>PID</th><th>TID</th>";
  out += "<th>Wall</th>";
  for (size_t p = 0; p < kPhaseCount; ++p) out += "<th>" + html_escape(phase_title(Phase(p))) + "</th>";
  out += "</tr></thead><tbody>";
  int64_t wall = 0;
  for (const StepPhases& s : r.phases) {
    wall = ptprof::detail::saturating_add(wall, s.wall_ns);
    out += "<tr>" + int_cell(int64_t(s.step));
    if (many_threads) out += int_cell(s.pid) + int_cell(s.tid);
    out += time_cell(s.wall_ns);
    for (int64_t ns : s.ns) out += time_cell(ns);
    out += "</tr>";
  }
  out += "</tbody><tfoot><tr><th>Total</th>";
  if (many_threads) out += "<th></th><th></th>";
  out += time_cell(wall);
  for (int64_t ns : phase_totals(r.phases)) out += time_cell(ns, share_text(ns, wall));
  return out + "</tr></tfoot></table>";
}

std::string compile_section(const CompileReport& c) {
  if (!c.any()) return {};
  // The PID only once the steps or notes come from more than one process.
  const int32_t pid = !c.steps.empty() ? c.steps[0].pid : !c.events.empty() ? c.events[0].pid : 0;
  const bool many =
      std::any_of(c.steps.begin(), c.steps.end(), [&](const StepCompile& s) { return s.pid != pid; }) ||
      std::any_of(c.events.begin(), c.events.end(), [&](const CompileEventRow& e) { return e.pid != pid; });
  const std::string pid_head = many ? "<th>PID</th>" : "";
  std::string out =
      "\n<h2 id=\"compile-title\">Compile</h2>\n<p>torch.compile's compile time (torch's <code>(dynamo_timed)"
      "</code> scopes: the compile phase above), split by what compiled; " +
      html_escape(format_time_us(double(c.outside_steps_ns) / 1000.0)) +
      " outside the steps. Recompiles: " + std::to_string(c.recompiles) +
      ", graph breaks: " + std::to_string(c.graph_breaks) + ", cache hits: " + std::to_string(c.cache_hits) +
      ", cache misses: " + std::to_string(c.cache_misses) +
      ".</p>\n<table class=\"ops\" id=\"compile\"><thead><tr><th>Step</th>" + pid_head + "<th>Compile</th>";
  for (size_t k = 0; k < kCompileKindCount; ++k)
    out += "<th>" + html_escape(compile_kind_title(CompileKind(k))) + "</th>";
  out += "<th>Recompiles</th><th>Graph breaks</th><th>Cache hits</th><th>Cache misses</th></tr></thead><tbody>";
  for (const StepCompile& s : c.steps) {
    if (s.ns == 0 && !s.recompiles && !s.graph_breaks && !s.cache_hits && !s.cache_misses) continue;
    out += "<tr>" + int_cell(int64_t(s.step)) + (many ? int_cell(s.pid) : "") + time_cell(s.ns);
    for (int64_t ns : s.kinds) out += time_cell(ns);
    out +=
        int_cell(s.recompiles) + int_cell(s.graph_breaks) + int_cell(s.cache_hits) + int_cell(s.cache_misses) + "</tr>";
  }
  out += "</tbody><tfoot><tr><th>Total</th>" + std::string(many ? "<th></th>" : "") + time_cell(c.total_ns);
  for (int64_t ns : c.kinds) out += time_cell(ns, share_text(ns, c.total_ns));
  out += int_cell(c.recompiles) + int_cell(c.graph_breaks) + int_cell(c.cache_hits) + int_cell(c.cache_misses) +
         "</tr></tfoot></table>\n";
  if (c.events.empty()) return out;
  out +=
      "<p>Recompiles and graph breaks, with torch's reasons:</p>\n<table class=\"ops\" id=\"compile-events\">"
      "<thead><tr><th>Step</th>" +
      pid_head + "<th>What</th><th>Compile id</th><th>Reason</th></tr></thead><tbody>";
  for (const CompileEventRow& e : c.events) {
    out += "<tr><td>" + (e.step ? std::to_string(*e.step) : std::string("outside the steps")) + "</td>" +
           (many ? int_cell(e.pid) : "") + "<td class=\"text\">" +
           (e.note.kind == CompileNote::Kind::Recompile ? "recompile" : "graph break") + "</td><td>" +
           html_escape(e.note.compile_id) + "</td><td class=\"text\">" + html_escape(e.note.text) + "</td></tr>";
  }
  return out + "</tbody></table>\n";
}

std::string diff_table(const HtmlBaseline& b, size_t rows) {
  const diff::Diff& d = b.diff;
  std::string out = "<p>Baseline: ";
  for (size_t i = 0; i < b.files.size(); ++i) out += (i ? ", " : "") + html_escape(b.files[i]);
  out += ". Self CPU time total " + format_time_us(double(d.self_cpu_total_a_ns) / 1000.0) + " in the baseline, " +
         format_time_us(double(d.self_cpu_total_b_ns) / 1000.0) +
         " here; + means more here. Largest change in self CPU time first.</p>";
  if (d.per_step)
    out += "<p>Per-step averages: the baseline recorded " + std::to_string(d.steps_a) + " steps, this run " +
           std::to_string(d.steps_b) + "; calls and times are each side's totals divided by its steps.</p>";
  for (const std::string& w : d.warnings)
    out += "<p class=\"bad\">The two recordings differ in how they were recorded: " + html_escape(w) + ".</p>";
  if (d.dropped_a || d.dropped_b)
    out += "<p class=\"drops bad\">Events were dropped (ring full): " + std::to_string(d.dropped_a) +
           " in the baseline, " + std::to_string(d.dropped_b) +
           " here; their counts and times are lower than they ran.</p>";
  if (d.rows.empty()) return out + "<p>No operator events on either side.</p>";
  out +=
      "<table class=\"ops\" id=\"diff\"><thead><tr><th>Name</th><th>Change</th><th>Calls (baseline)</th>"
      "<th>Calls</th><th>Calls +/-</th><th>Self CPU (baseline)</th><th>Self CPU</th><th>Self CPU +/-</th>"
      "<th>CPU total (baseline)</th><th>CPU total</th><th>CPU total +/-</th></tr></thead><tbody>";
  const size_t n = std::min(rows, d.rows.size());
  for (size_t i = 0; i < n; ++i) {
    const diff::Row& row = d.rows[i];
    const char* change = row.in_a && row.in_b ? "" : row.in_a ? "removed" : "added";
    out += "<tr><td>" + html_escape(row.name) + "</td><td>" + change + "</td>" + calls_cell(row.calls_a(), d.per_step) +
           calls_cell(row.calls_b(), d.per_step) + calls_cell(row.calls_b() - row.calls_a(), d.per_step, true) +
           time_cell(ns(row.self_cpu_a_ns())) + time_cell(ns(row.self_cpu_b_ns())) +
           signed_time_cell(ns(row.self_cpu_b_ns() - row.self_cpu_a_ns())) + time_cell(ns(row.cpu_total_a_ns())) +
           time_cell(ns(row.cpu_total_b_ns())) + signed_time_cell(ns(row.cpu_total_b_ns() - row.cpu_total_a_ns())) +
           "</tr>";
  }
  out += "</tbody></table>";
  if (n < d.rows.size())
    out += "<p>" + std::to_string(d.rows.size() - n) + " more names with smaller changes are left out.</p>";
  return out;
}

}  // namespace ptprof::html::detail
