#include <algorithm>
#include <numeric>

#include "ptprof/analysis/report_format.hpp"
#include "report_html_plots.hpp"
#include "text_util.hpp"

namespace ptprof::report::detail {

namespace {

constexpr int kWidth = 860;
constexpr int kLabelWidth = 300;
constexpr int kBarHeight = 18;
constexpr int kGap = 6;
constexpr const char* kOperatorColor = "#3b75af";
constexpr const char* kOtherColor = "#f0a243";

std::string px(double v) { return fixed(v, 1); }

std::string time_label(int64_t ns) { return format_time_us(double(ns) / 1000.0); }

std::string rect(double x, double y, double w, double h, const char* color, const std::string& title) {
  return "<rect x=\"" + px(x) + "\" y=\"" + px(y) + "\" width=\"" + px(std::max(w, 0.0)) + "\" height=\"" + px(h) +
         "\" fill=\"" + color + "\"><title>" + html_escape(title) + "</title></rect>";
}

std::string text(double x, double y, const std::string& s, const char* anchor = "end") {
  return "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\" text-anchor=\"" + anchor + "\">" + html_escape(s) + "</text>";
}

std::string svg_open(int height, const std::string& label) {
  return "<svg class=\"plot\" role=\"img\" aria-label=\"" + html_escape(label) + "\" width=\"" +
         std::to_string(kWidth) + "\" height=\"" + std::to_string(height) + "\" viewBox=\"0 0 " +
         std::to_string(kWidth) + " " + std::to_string(height) + "\">";
}

}  // namespace

std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
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
          out += "\xEF\xBF\xBD";
        else
          out += c;
    }
  }
  return out;
}

std::string step_breakdown_svg(const Report& r) {
  if (r.steps.empty()) return {};
  int64_t longest = 1;
  for (const StepRow& s : r.steps) longest = std::max(longest, s.wall_ns);
  const double scale = double(kWidth - kLabelWidth - 90) / double(longest);
  const bool many_threads = std::any_of(r.steps.begin(), r.steps.end(), [&](const StepRow& s) {
    return s.pid != r.steps[0].pid || s.tid != r.steps[0].tid;
  });
  const int legend = 24;
  int height = legend + int(r.steps.size()) * (kBarHeight + kGap) + kGap;
  std::string out = svg_open(height, "Time per step: operators and the rest");
  out += rect(kLabelWidth, 4, 12, 12, kOperatorColor, "operators") +
         text(kLabelWidth + 16, 14, "operators (top-level ops and ranges)", "start");
  out += rect(kLabelWidth + 300, 4, 12, 12, kOtherColor, "other") +
         text(kLabelWidth + 316, 14, "rest of the step", "start");
  double y = legend;
  for (const StepRow& s : r.steps) {
    std::string label = "step " + std::to_string(s.step);
    if (many_threads) label += " (" + std::to_string(s.pid) + "/" + std::to_string(s.tid) + ")";
    int64_t ops = std::min(s.operator_ns, s.wall_ns);
    double w_ops = double(ops) * scale, w_rest = double(s.wall_ns - ops) * scale;
    out += text(kLabelWidth - 8, y + kBarHeight - 5, label);
    out += rect(kLabelWidth, y, w_ops, kBarHeight, kOperatorColor, label + ": operators " + time_label(ops));
    out +=
        rect(kLabelWidth + w_ops, y, w_rest, kBarHeight, kOtherColor, label + ": rest " + time_label(s.wall_ns - ops));
    out += text(kLabelWidth + w_ops + w_rest + 6, y + kBarHeight - 5, time_label(s.wall_ns), "start");
    y += kBarHeight + kGap;
  }
  return out + "</svg>";
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
  const double scale = double(kWidth - kLabelWidth - 90) / double(top);
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

}  // namespace ptprof::report::detail
