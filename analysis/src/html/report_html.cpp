// The report as one self-contained HTML page (report_html.hpp). The plots are
// SVG written here; the scripts sort the tables and draw the timeline and the
// flame graphs (page_scripts.cpp).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "html/page_events.hpp"
#include "html/report_html_plots.hpp"
#include "html/report_html_tables.hpp"
#include "ptprof/analysis/report_format.hpp"
#include "ptprof/analysis/report_html.hpp"
#include "report/report_columns.hpp"
#include "text/text_util.hpp"

namespace ptprof::html {

using namespace detail;

using report::format_time_us;
using report::ProcessRow;
using report::Report;
using report::StepRow;
using report::ThreadDrops;
using report::detail::Column;
using report::detail::columns;
using report::detail::format_value;
using report::detail::Value;
using text::fixed;

namespace {

constexpr size_t kTopOperators = 15;
// Rows in the page's operator table: a run of 286,000 names made a 71 MB page
// that took 463 MB to render; past this many, one line says how many more.
constexpr size_t kMaxPageRows = 5000;
// Events in the page's timeline: a window of 1 M events keeps the longest
// 300,000 (about 9 MB of page), and the page says so.
constexpr size_t kMaxTimelineEvents = 300000;

constexpr const char* kStyle = R"(
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; }
.meta td { padding: 2px 12px 2px 0; }
.drops { padding: 8px 12px; border-radius: 4px; }
.drops.bad { background: #fde2e1; border: 1px solid #d33; }
.drops.ok { background: #e6f4e6; border: 1px solid #5a5; }
svg.plot text { font-size: 12px; fill: #222; }
table.ops { border-collapse: collapse; }
table.ops th, table.ops td { padding: 3px 8px; border-bottom: 1px solid #ddd; text-align: right; }
table.ops th { cursor: pointer; background: #f4f4f4; position: sticky; top: 0; white-space: nowrap; }
table.ops td:first-child, table.ops th:first-child { text-align: left; }
table.ops td.text { text-align: left; }
table.ops td.text:not(:last-child) { white-space: nowrap; }
#timeline-box { max-height: 640px; overflow-y: auto; border: 1px solid #ccc; }
#timeline { display: block; cursor: default; position: sticky; top: 0; }
#tl-details { margin-top: 8px; padding: 8px 12px; background: #f8f8f8; border: 1px solid #ddd; min-height: 40px; }
#tl-details h3 { margin: 0 0 6px 0; font-size: 15px; }
#tl-details pre { margin: 2px 0; white-space: pre-wrap; font-size: 12px; }
#flame { display: block; margin-top: 6px; }
#flame-info, #memory-hover { font-size: 13px; color: #333; min-height: 18px; }
)";

// Clicking a title sorts its table's body by that column (numbers by their
// data-v value), descending first, ascending on the second click. Totals in a
// tfoot stay last.
constexpr const char* kSortScript = R"(
document.querySelectorAll('table.ops thead th').forEach(function (th) {
  th.addEventListener('click', function () {
    var col = th.cellIndex;
    var body = th.closest('table').tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var desc = th.dataset.order !== 'desc';
    th.dataset.order = desc ? 'desc' : 'asc';
    rows.sort(function (a, b) {
      var x = a.cells[col], y = b.cells[col];
      var u = x.dataset.v !== undefined ? parseFloat(x.dataset.v) : x.textContent;
      var v = y.dataset.v !== undefined ? parseFloat(y.dataset.v) : y.textContent;
      var c = u < v ? -1 : u > v ? 1 : 0;
      return desc ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
)";

std::string cell_html(const Value& v) {
  std::string sort_value;
  if (v.kind == Value::TimeNs || v.kind == Value::Percent)
    sort_value = std::isnan(v.num) ? "0" : fixed(v.num, 3);
  else if (v.kind == Value::Int || v.kind == Value::Bytes)
    sort_value = std::to_string(v.i);
  std::string out = sort_value.empty() ? "<td>" : "<td data-v=\"" + sort_value + "\">";
  return out + html_escape(format_value(v)) + "</td>";
}

std::string metadata(const Report& r) {
  std::string windows;
  for (uint32_t w : r.windows) windows += (windows.empty() ? "" : ", ") + std::to_string(w);
  // "1 window (0)", "3 windows (0, 1, 2)": how many, then which.
  const std::string window_count = r.windows.size() == 1 ? "1 window" : std::to_string(r.windows.size()) + " windows";
  std::string out = "<table class=\"meta\">";
  auto row = [&](const std::string& k, const std::string& v) {
    out += "<tr><td>" + html_escape(k) + "</td><td>" + html_escape(v) + "</td></tr>";
  };
  row("Trace files", std::to_string(r.files.size()));
  for (const auto& f : r.files) row("", f);
  row("Windows", windows.empty() ? "none" : window_count + " (" + windows + ")");
  row("Events", std::to_string(r.events));
  row("Operators (names)", std::to_string(r.rows.size()));
  row("Steps", std::to_string(r.steps.size()));
  row("Self CPU time total", format_time_us(double(r.self_cpu_total_ns) / 1000.0));
  return out + "</table>";
}

std::string drops(const Report& r) {
  if (r.dropped == 0)
    return "<p class=\"drops ok\" id=\"drops\">No events were dropped: every event recorded is here.</p>";
  std::string out = "<div class=\"drops bad\" id=\"drops\"><strong>" + std::to_string(r.dropped) +
                    " events were dropped</strong> (a thread's ring was full): the counts and times "
                    "below are lower than what ran.<ul>";
  for (const ThreadDrops& d : r.drops)
    out += "<li>" + html_escape(d.path) + ": pid " + std::to_string(d.pid) + ", tid " + std::to_string(d.tid) + " (" +
           html_escape(d.thread_name) + "): " + std::to_string(d.dropped) + "</li>";
  return out + "</ul></div>";
}

// The time before the first step and after the last, apart from the steps.
std::string outside_steps(const Report& r) {
  if (r.outside_steps.empty()) return {};
  std::map<int32_t, int32_t> ranks;
  for (const ProcessRow& p : r.ranks.processes)
    if (p.rank >= 0) ranks[p.pid] = p.rank;
  auto who = [&](int32_t pid) {
    return ranks.count(pid) ? process_label(ranks, pid) + ", pid " + std::to_string(pid) : "pid " + std::to_string(pid);
  };
  std::string out = "<p>Not steps, and kept out of the step statistics:</p><ul id=\"outside-steps\">";
  for (const StepRow& s : r.outside_steps) {
    const std::string_view what =
        s.role == StepRow::Role::BeforeSteps ? trace::kBeforeStepsName : trace::kAfterStepsName;
    out += "<li>" + html_escape(std::string(what)) + " (" + html_escape(who(s.pid)) +
           "): " + html_escape(format_time_us(double(s.wall_ns) / 1000.0)) + ", operators " +
           html_escape(format_time_us(double(s.operator_ns) / 1000.0)) + "</li>";
  }
  return out + "</ul>\n";
}

std::string operator_table_html(const Report& r) {
  if (r.rows.empty()) return "<p>No operator events in the inputs.</p>";
  const std::vector<Column> cols = columns(r);
  std::string out = "<table class=\"ops\" id=\"ops\"><thead><tr>";
  for (const Column& c : cols) out += "<th>" + html_escape(c.title) + "</th>";
  out += "</tr></thead><tbody>";
  const size_t n = std::min(r.rows.size(), kMaxPageRows);
  for (size_t i = 0; i < n; ++i) {
    out += "<tr>";
    for (const Column& c : cols) out += cell_html(c.get(r.rows[i], r));
    out += "</tr>";
  }
  out += "</tbody></table>";
  if (n < r.rows.size())
    out += "<p id=\"more-rows\">" + std::to_string(r.rows.size() - n) +
           " more rows are left out (the page shows the first " + std::to_string(kMaxPageRows) +
           " in the report's order); <code>ptprof report --format csv</code> lists them all.</p>";
  return out;
}

// The steps' starts, as the memory plot marks them.
std::vector<StepMarker> step_markers(const HtmlEvents* events) {
  std::vector<StepMarker> out;
  if (!events) return out;
  const HtmlEvents::Impl& ev = events->impl();
  std::set<int32_t> pids;
  for (const PageStep& s : ev.steps) pids.insert(s.pid);
  for (const PageStep& s : ev.steps)
    out.push_back({s.start_ns, (pids.size() > 1 ? process_label(ev.ranks, s.pid) + " " : std::string()) + "step " +
                                   std::to_string(s.number)});
  std::sort(out.begin(), out.end(), [](const StepMarker& a, const StepMarker& b) { return a.ns < b.ns; });
  return out;
}

}  // namespace

std::string render_html(const Report& r, const HtmlBaseline* baseline, const memory::Summary* memory,
                        const HtmlEvents* events) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>ptprof report</title><style>";
  out += kStyle;
  out += "</style></head><body>\n<h1>ptprof report</h1>\n";
  out += metadata(r) + "\n" + drops(r) + "\n";
  for (const std::string& note : r.gpu.notes) out += "<p class=\"cuda-note\">" + html_escape(note) + "</p>\n";
  std::string steps = step_breakdown_svg(r);
  out += "<h2>Time per step</h2>\n" + (steps.empty() ? "<p>No ProfilerStep spans in the inputs.</p>" : steps);
  out += outside_steps(r);
  out += ranks_section(r.ranks);
  if (events) {
    out += "\n<h2 id=\"timeline-title\">Timeline</h2>\n" + timeline_section(events->impl(), kMaxTimelineEvents);
    const std::string flames = flame_section(events->impl());
    if (!flames.empty()) out += "\n<h2 id=\"flame-title\">Flame graphs</h2>\n" + flames;
  }
  std::string phases = phase_breakdown_svg(r);
  out += "\n<h2 id=\"phases-title\">Time per step by phase</h2>\n";
  if (phases.empty()) {
    out += "<p>No ProfilerStep spans in the inputs.</p>";
  } else {
    out +=
        "<p>Each instant of a step goes to one phase: compile (torch.compile's <code>(dynamo_timed)</code> "
        "scopes, on any thread of the process), else data loading (DataLoader's <code>__next__</code>), "
        "else optimizer (<code>Optimizer.step</code>, <code>Optimizer.zero_grad</code>), else backward "
        "(autograd's backward ops, on any thread of the process), else forward (operators on the step's "
        "thread), else other.</p>\n" +
        phases + "\n" + phase_table(r);
  }
  out += compile_section(r.compile);
  if (memory && !memory->timeline.empty()) {
    out +=
        "\n<h2 id=\"memory-title\">Memory over time</h2>\n<p>torch's allocated and reserved totals after each "
        "memory event (CUDA segments as reserved), per process and device: <code>ptprof memory</code> has the "
        "peaks and the leak candidates.</p>\n" +
        memory_timeline_svg(memory->timeline, memory->peaks, step_markers(events)) + memory_growth_html(*memory) +
        memory_categories_html(*memory);
  }
  std::string top = top_operators_svg(r, kTopOperators);
  out += "\n<h2>Top operators by self CPU time</h2>\n" + (top.empty() ? "<p>No operators.</p>" : top);
  out += "\n<h2>Operators</h2>\n<p>torch's key_averages() columns; click a title to sort.</p>\n";
  out += operator_table_html(r);
  if (baseline) {
    out += "\n<h2>Compared with the baseline</h2>\n<div id=\"baseline\">" + diff_table(*baseline, baseline->rows) +
           "</div>";
  }
  out += "\n<script>";
  out += kSortScript;
  out += kTimelineScript;
  out += kFlameScript;
  out += kMemoryHoverScript;
  out += "</script>\n</body></html>\n";
  return out;
}

}  // namespace ptprof::html
