// The HTML report's memory plot: allocated (solid) and reserved (dashed)
// bytes over time, one pair of lines per process and device, from the
// Memory events' totals (`ptprof memory --timeline`'s points).
#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "html/report_html_plots.hpp"
#include "ptprof/analysis/report_format.hpp"
#include "report/text_util.hpp"

namespace ptprof::report::detail {

namespace {

constexpr int kWidth = 860;
constexpr double kLeft = 90, kRight = 20, kTop = 12, kPlotHeight = 180;
constexpr int kColumns = 800;  // at most this many x positions per line: big runs stay small pages
constexpr const char* kColors[] = {"#3b75af", "#c44e52", "#55a868", "#8172b2", "#f0a243", "#64b5cd"};

std::string px(double v) { return fixed(v, 1); }

struct Line {
  std::vector<std::pair<int64_t, int64_t>> points;  // (ns, bytes), by time
};

// A step line through `points` (memory holds its value until the next
// event), at most one column's maximum and last value per x pixel.
std::string polyline(const Line& l, int64_t t0, double x_scale, double y_scale, const char* color, bool dashed) {
  std::string pts;
  double prev_y = kTop + kPlotHeight;
  long column = -1;
  int64_t column_max = 0, column_last = 0;
  auto flush = [&] {
    if (column < 0) return;
    const double x = kLeft + double(column) * (double(kWidth - kLeft - kRight) / kColumns);
    const double top = kTop + kPlotHeight - double(column_max) * y_scale;
    const double last = kTop + kPlotHeight - double(column_last) * y_scale;
    pts += px(x) + "," + px(prev_y) + " " + px(x) + "," + px(top) + " " + px(x) + "," + px(last) + " ";
    prev_y = last;
  };
  for (const auto& [ns, bytes] : l.points) {
    const long c = long(double(ns - t0) * x_scale / (double(kWidth - kLeft - kRight) / kColumns));
    if (c != column) {
      flush();
      column = c;
      column_max = bytes;
    }
    column_max = std::max(column_max, bytes);
    column_last = bytes;
  }
  flush();
  pts += px(kWidth - kRight) + "," + px(prev_y);
  return "<polyline fill=\"none\" stroke=\"" + std::string(color) + "\" stroke-width=\"1.5\"" +
         (dashed ? " stroke-dasharray=\"5,3\"" : "") + " points=\"" + pts + "\"/>";
}

std::string label(double x, double y, const std::string& s, const char* anchor) {
  return "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\" text-anchor=\"" + anchor + "\">" + html_escape(s) + "</text>";
}

}  // namespace

std::string memory_timeline_svg(const std::vector<memory::TimelinePoint>& timeline) {
  if (timeline.empty()) return {};
  // (pid, device type, index) -> allocated and reserved lines.
  std::map<std::tuple<int32_t, int8_t, int8_t>, std::pair<Line, Line>> series;
  int64_t t0 = timeline.front().ns, t1 = t0, top = 1;
  for (const memory::TimelinePoint& p : timeline) {
    auto& [allocated, reserved] = series[{p.pid, p.device_type, p.device_index}];
    allocated.points.emplace_back(p.ns, p.allocated);
    reserved.points.emplace_back(p.ns, p.reserved);
    t0 = std::min(t0, p.ns);
    t1 = std::max(t1, p.ns);
    top = std::max({top, p.allocated, p.reserved});
  }
  const double x_scale = double(kWidth - kLeft - kRight) / double(std::max<int64_t>(1, t1 - t0));
  const double y_scale = kPlotHeight / double(top);
  const int height = int(kTop + kPlotHeight + 24 + 20 * double(series.size()));
  std::string out = "<svg class=\"plot\" role=\"img\" aria-label=\"memory over time\" width=\"" +
                    std::to_string(kWidth) + "\" height=\"" + std::to_string(height) + "\" viewBox=\"0 0 " +
                    std::to_string(kWidth) + " " + std::to_string(height) + "\">";
  const double bottom = kTop + kPlotHeight;
  out += "<line x1=\"" + px(kLeft) + "\" y1=\"" + px(bottom) + "\" x2=\"" + px(kWidth - kRight) + "\" y2=\"" +
         px(bottom) + "\" stroke=\"#888\"/>";
  out += "<line x1=\"" + px(kLeft) + "\" y1=\"" + px(kTop) + "\" x2=\"" + px(kLeft) + "\" y2=\"" + px(bottom) +
         "\" stroke=\"#888\"/>";
  out += label(kLeft - 6, kTop + 10, memory::format_bytes(top, false), "end");
  out += label(kLeft - 6, bottom, "0", "end");
  out += label(kLeft, bottom + 16, "0", "start");
  out += label(kWidth - kRight, bottom + 16, format_time_us(double(t1 - t0) / 1000.0), "end");
  size_t i = 0;
  for (const auto& [key, lines] : series) {
    const char* color = kColors[i % std::size(kColors)];
    out += polyline(lines.first, t0, x_scale, y_scale, color, false);
    const bool any_reserved = std::any_of(lines.second.points.begin(), lines.second.points.end(),
                                          [](const auto& p) { return p.second != 0; });
    if (any_reserved) out += polyline(lines.second, t0, x_scale, y_scale, color, true);
    const double y = bottom + 36 + 20 * double(i);
    out += "<rect x=\"" + px(kLeft) + "\" y=\"" + px(y - 10) + "\" width=\"12\" height=\"12\" fill=\"" + color + "\"/>";
    out += label(kLeft + 18, y,
                 "pid " + std::to_string(std::get<0>(key)) + " " +
                     memory::device_name(std::get<1>(key), std::get<2>(key)) +
                     (any_reserved ? ": allocated (solid), reserved (dashed)" : ": allocated"),
                 "start");
    ++i;
  }
  return out + "</svg>";
}

std::string memory_growth_html(const memory::Summary& s) {
  std::string out;
  for (const memory::OutOfMemory& o : s.out_of_memory)
    out += "<li>Out of memory: pid " + std::to_string(o.pid) + " " + html_escape(o.api) + " of " +
           memory::format_bytes(int64_t(o.bytes), false) + " failed in " +
           html_escape(o.op.empty() ? "[outside any op]" : o.op) + "</li>";
  for (const memory::Growth& g : s.growth) {
    const std::string& what = g.inputs.empty() ? g.shapes : g.inputs;
    out += "<li>Grows step over step: " + html_escape(what.empty() ? g.op : g.op + " " + what) + " on " +
           memory::device_name(g.device_type, g.device_index) + ", " +
           memory::format_bytes(g.bytes / int64_t(g.steps), false) + " per step in " + std::to_string(g.steps) +
           " steps, " + memory::format_bytes(g.bytes, false) + " live at the end of step " +
           std::to_string(g.last_step) + "</li>";
  }
  return out.empty() ? out : "<ul class=\"memory-growth\">" + out + "</ul>\n";
}

}  // namespace ptprof::report::detail
