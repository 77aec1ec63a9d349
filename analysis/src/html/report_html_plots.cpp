#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "html/report_html_plots.hpp"
#include "ptprof/analysis/report_format.hpp"
#include "text/text_util.hpp"
#include "text/utf8.hpp"

namespace ptprof::html::detail {

using report::format_time_us;
using report::kPhaseCount;
using report::Phase;
using report::phase_title;
using report::ProcessRow;
using report::RankSummary;
using report::Report;
using report::Row;
using report::StepRow;
using text::fixed;
using text::utf8_length;
using text::utf8_prefix;

namespace {

constexpr int kLabelWidth = 300;
constexpr int kBarHeight = 18;
constexpr int kGap = 6;
constexpr const char* kOperatorColor = "#3b75af";
constexpr const char* kOtherColor = "#f0a243";
// Forward, backward, optimizer, data loading, compile, other (Phase order).
constexpr const char* kPhaseColors[kPhaseCount] = {"#3b75af", "#c44e52", "#55a868", "#8172b2", "#ccb974", "#b0b0b0"};

std::string time_label(int64_t ns) { return format_time_us(double(ns) / 1000.0); }

std::string rect(double x, double y, double w, double h, const char* color, const std::string& title) {
  return "<rect x=\"" + svg_px(x) + "\" y=\"" + svg_px(y) + "\" width=\"" + svg_px(std::max(w, 0.0)) + "\" height=\"" +
         svg_px(h) + "\" fill=\"" + color + "\"><title>" + html_escape(title) + "</title></rect>";
}

std::string text(double x, double y, const std::string& s, const char* anchor = "end") {
  return "<text x=\"" + svg_px(x) + "\" y=\"" + svg_px(y) + "\" text-anchor=\"" + anchor + "\">" + html_escape(s) +
         "</text>";
}

std::string svg_open(int height, const std::string& label) {
  return "<svg class=\"plot\" role=\"img\" aria-label=\"" + html_escape(label) + "\" width=\"" +
         std::to_string(kPlotWidth) + "\" height=\"" + std::to_string(height) + "\" viewBox=\"0 0 " +
         std::to_string(kPlotWidth) + " " + std::to_string(height) + "\">";
}

struct Segment {
  int64_t ns;
  const char* color;
  std::string name;
};
struct Bar {
  std::string label;
  int64_t wall_ns;
  std::vector<Segment> segments;  // left to right
};
struct Legend {
  const char* color;
  std::string text;
  double x;  // from the bars' left edge
};

// "step N"; when the steps come from more than one thread, the rank (or the
// pid) first, and the tid when one process has several step threads.
template <class Steps>
std::vector<std::string> step_labels(const Steps& steps, const RankSummary& ranks) {
  std::map<int32_t, int32_t> rank_of;
  for (const ProcessRow& p : ranks.processes)
    if (p.rank >= 0) rank_of[p.pid] = p.rank;
  const bool many_threads = std::any_of(steps.begin(), steps.end(),
                                        [&](const auto& s) { return s.pid != steps[0].pid || s.tid != steps[0].tid; });
  std::set<std::pair<int32_t, int32_t>> threads;
  for (const auto& s : steps) threads.emplace(s.pid, s.tid);
  std::map<int32_t, int> threads_of;
  for (const auto& [pid, tid] : threads) ++threads_of[pid];
  std::vector<std::string> out;
  for (const auto& s : steps) {
    std::string label = "step " + std::to_string(s.step);
    if constexpr (requires { s.partial; })
      if (s.partial) label += " (partial)";
    if (many_threads) {
      auto it = rank_of.find(s.pid);
      std::string who = it == rank_of.end() ? "pid " + std::to_string(s.pid) : "rank " + std::to_string(it->second);
      if (threads_of[s.pid] > 1) who += " tid " + std::to_string(s.tid);
      label.insert(0, who + " ");
    }
    out.push_back(std::move(label));
  }
  return out;
}

// One horizontal bar per step, its segments stacked, its wall time after it,
// all on the scale of the longest step. "" without bars.
std::string stacked_bars_svg(const std::string& title, const std::vector<Legend>& legend,
                             const std::vector<Bar>& bars) {
  if (bars.empty()) return {};
  int64_t longest = 1;
  for (const Bar& b : bars) longest = std::max(longest, b.wall_ns);
  const double scale = double(kPlotWidth - kLabelWidth - 90) / double(longest);
  const int legend_height = 24;
  const int height = legend_height + int(bars.size()) * (kBarHeight + kGap) + kGap;
  std::string out = svg_open(height, title);
  for (const Legend& l : legend)
    out += rect(kLabelWidth + l.x, 4, 12, 12, l.color, l.text) + text(kLabelWidth + l.x + 16, 14, l.text, "start");
  double y = legend_height;
  for (const Bar& b : bars) {
    out += text(kLabelWidth - 8, y + kBarHeight - 5, b.label);
    double x = kLabelWidth;
    for (const Segment& seg : b.segments) {
      const double w = double(seg.ns) * scale;
      if (seg.ns > 0) out += rect(x, y, w, kBarHeight, seg.color, b.label + ": " + seg.name + " " + time_label(seg.ns));
      x += w;
    }
    out += text(x + 6, y + kBarHeight - 5, time_label(b.wall_ns), "start");
    y += kBarHeight + kGap;
  }
  return out + "</svg>";
}

}  // namespace

std::string html_escape(std::string_view s) {
  std::string out;
  auto ascii = [&](char c) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        // Control characters would make the page's text unreadable.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t')
          out += text::kReplacement;
        else
          out += c;
    }
  };
  // The page declares UTF-8: a byte that is not is replaced, as a strict reader would.
  text::for_each_utf8_sequence(
      s,
      [&](std::string_view sequence) {
        if (sequence.size() == 1)
          ascii(sequence[0]);
        else
          out += sequence;
      },
      [&](unsigned char) { out += text::kReplacement; });
  return out;
}

std::string step_breakdown_svg(const Report& r) {
  std::vector<Bar> bars;
  const std::vector<std::string> labels = step_labels(r.steps, r.ranks);
  for (size_t i = 0; i < r.steps.size(); ++i) {
    const StepRow& s = r.steps[i];
    const int64_t ops = std::min(s.operator_ns, s.wall_ns);
    bars.push_back(
        Bar{labels[i], s.wall_ns, {{ops, kOperatorColor, "operators"}, {s.wall_ns - ops, kOtherColor, "rest"}}});
  }
  return stacked_bars_svg(
      "Time per step: operators and the rest",
      {{kOperatorColor, "operators (top-level ops and ranges)", 0}, {kOtherColor, "rest of the step", 300}}, bars);
}

std::string phase_breakdown_svg(const Report& r) {
  std::vector<Legend> legend;
  for (size_t p = 0; p < kPhaseCount; ++p)
    // 100 px apart: six phases' labels fit the plot's width.
    legend.push_back(Legend{kPhaseColors[p], std::string(phase_title(Phase(p))), double(p) * 100});
  std::vector<Bar> bars;
  const std::vector<std::string> labels = step_labels(r.phases, r.ranks);
  for (size_t i = 0; i < r.phases.size(); ++i) {
    Bar bar{labels[i], r.phases[i].wall_ns, {}};
    for (size_t p = 0; p < kPhaseCount; ++p)
      bar.segments.push_back({r.phases[i].ns[p], kPhaseColors[p], legend[p].text});
    bars.push_back(std::move(bar));
  }
  return stacked_bars_svg("Time per step by phase", legend, bars);
}

std::string top_operators_svg(const Report& r, size_t count) {
  std::vector<const Row*> rows;
  for (const Row& row : r.rows)
    if (row.name != "ProfilerStep*") rows.push_back(&row);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row* a, const Row* b) { return a->stats.self_cpu_ns > b->stats.self_cpu_ns; });
  rows.resize(std::min(rows.size(), count));
  if (rows.empty()) return {};
  int64_t top = std::max<int64_t>(rows[0]->stats.self_cpu_ns, 1);
  const double scale = double(kPlotWidth - kLabelWidth - 90) / double(top);
  int height = int(rows.size()) * (kBarHeight + kGap) + kGap;
  std::string out = svg_open(height, "Operators with the most self CPU time");
  double y = kGap;
  for (const Row* row : rows) {
    std::string name = utf8_length(row->name) > 40 ? std::string(utf8_prefix(row->name, 37)) + "..." : row->name;
    out += text(kLabelWidth - 8, y + kBarHeight - 5, name);
    out += rect(kLabelWidth, y, double(row->stats.self_cpu_ns) * scale, kBarHeight, kOperatorColor,
                row->name + ": self CPU " + time_label(row->stats.self_cpu_ns) + ", " +
                    std::to_string(row->stats.count) + " calls");
    out += text(kLabelWidth + double(row->stats.self_cpu_ns) * scale + 6, y + kBarHeight - 5,
                time_label(row->stats.self_cpu_ns), "start");
    y += kBarHeight + kGap;
  }
  return out + "</svg>";
}

std::string svg_px(double v) { return fixed(v, 1); }

}  // namespace ptprof::html::detail
