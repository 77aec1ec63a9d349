// The HTML report's memory plot: allocated (solid) and reserved (dashed)
// bytes over time, one pair of lines per process and device, from the
// Memory events' totals (`ptprof memory --timeline`'s points); the steps'
// starts marked, each device's allocated peak marked with its op, and the
// values under the pointer on hover (page_scripts.cpp).
#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "html/page_events.hpp"
#include "html/report_html_plots.hpp"
#include "ptprof/analysis/report_format.hpp"
#include "text/text_util.hpp"

namespace ptprof::html::detail {

using report::format_time_us;

namespace {

constexpr double kLeft = 90, kRight = 20, kTop = 12, kPlotHeight = 180;
constexpr int kColumns = 800;  // at most this many x positions per line: big runs stay small pages
constexpr const char* kColors[] = {"#3b75af", "#c44e52", "#55a868", "#8172b2", "#f0a243", "#64b5cd"};

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
    const double x = kLeft + double(column) * (double(kPlotWidth - kLeft - kRight) / kColumns);
    const double top = kTop + kPlotHeight - double(column_max) * y_scale;
    const double last = kTop + kPlotHeight - double(column_last) * y_scale;
    pts += svg_px(x) + "," + svg_px(prev_y) + " " + svg_px(x) + "," + svg_px(top) + " " + svg_px(x) + "," +
           svg_px(last) + " ";
    prev_y = last;
  };
  for (const auto& [ns, bytes] : l.points) {
    const long c = long(double(ns - t0) * x_scale / (double(kPlotWidth - kLeft - kRight) / kColumns));
    if (c != column) {
      flush();
      column = c;
      column_max = bytes;
    }
    column_max = std::max(column_max, bytes);
    column_last = bytes;
  }
  flush();
  pts += svg_px(kPlotWidth - kRight) + "," + svg_px(prev_y);
  return "<polyline fill=\"none\" stroke=\"" + std::string(color) + "\" stroke-width=\"1.5\"" +
         (dashed ? " stroke-dasharray=\"5,3\"" : "") + " points=\"" + pts + "\"/>";
}

// The line's points as the hover reads them: at most one per column (its
// last value), times from t0.
void hover_series(std::string& out, const std::string& name, const Line& allocated, const Line& reserved, int64_t t0,
                  double x_scale, bool any_reserved) {
  std::string t, a, r;
  auto column = [&](size_t i) {
    return long(double(allocated.points[i].first - t0) * x_scale / (double(kPlotWidth - kLeft - kRight) / kColumns));
  };
  for (size_t i = 0; i < allocated.points.size(); ++i) {
    if (i + 1 < allocated.points.size() && column(i + 1) == column(i)) continue;  // not the column's last
    if (!t.empty()) {
      t += ',';
      a += ',';
      r += ',';
    }
    t += std::to_string(allocated.points[i].first - t0);
    a += std::to_string(allocated.points[i].second);
    r += std::to_string(reserved.points[i].second);
  }
  out += out.back() == '[' ? "{\"label\":" : ",{\"label\":";
  append_script_json_string(out, name);
  out += ",\"t\":[" + t + "],\"a\":[" + a + "]";
  if (any_reserved) out += ",\"r\":[" + r + "]";
  out += "}";
}

std::string label(double x, double y, const std::string& s, const char* anchor) {
  return "<text x=\"" + svg_px(x) + "\" y=\"" + svg_px(y) + "\" text-anchor=\"" + anchor + "\">" + html_escape(s) +
         "</text>";
}

}  // namespace

std::string memory_timeline_svg(const std::vector<memory::TimelinePoint>& timeline,
                                const std::vector<memory::Peak>& peaks, const std::vector<StepMarker>& steps) {
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
  const double x_scale = double(kPlotWidth - kLeft - kRight) / double(std::max<int64_t>(1, t1 - t0));
  const double y_scale = kPlotHeight / double(top);
  const int height = int(kTop + kPlotHeight + 24 + 20 * double(series.size() + 1));
  std::string out = "<svg class=\"plot\" id=\"memory-plot\" role=\"img\" aria-label=\"memory over time\" width=\"" +
                    std::to_string(kPlotWidth) + "\" height=\"" + std::to_string(height) + "\" viewBox=\"0 0 " +
                    std::to_string(kPlotWidth) + " " + std::to_string(height) + "\">";
  const double bottom = kTop + kPlotHeight;
  out += "<line x1=\"" + svg_px(kLeft) + "\" y1=\"" + svg_px(bottom) + "\" x2=\"" + svg_px(kPlotWidth - kRight) +
         "\" y2=\"" + svg_px(bottom) + "\" stroke=\"#888\"/>";
  out += "<line x1=\"" + svg_px(kLeft) + "\" y1=\"" + svg_px(kTop) + "\" x2=\"" + svg_px(kLeft) + "\" y2=\"" +
         svg_px(bottom) + "\" stroke=\"#888\"/>";
  out += label(kLeft - 6, kTop + 10, memory::format_bytes(top, false), "end");
  out += label(kLeft - 6, bottom, "0", "end");
  out += label(kLeft, bottom + 16, "0", "start");
  out += label(kPlotWidth - kRight, bottom + 16, format_time_us(double(t1 - t0) / 1000.0), "end");
  const double bottom_y = bottom;
  auto x_of = [&](int64_t ns) { return kLeft + double(ns - t0) * x_scale; };
  // The steps' starts: a dashed line and the step's label where there is room.
  double last_label_x = -1e9;
  for (const StepMarker& m : steps) {
    if (m.ns < t0 || m.ns > t1) continue;
    const double x = x_of(m.ns);
    out += "<line class=\"step-marker\" x1=\"" + svg_px(x) + "\" y1=\"" + svg_px(kTop) + "\" x2=\"" + svg_px(x) +
           "\" y2=\"" + svg_px(bottom_y) + "\" stroke=\"#9ab\" stroke-dasharray=\"2,3\"><title>" +
           html_escape(m.label) + "</title></line>";
    if (x - last_label_x > 60) {
      out += "<text class=\"step-label\" x=\"" + svg_px(x + 2) + "\" y=\"" + svg_px(kTop + 8) +
             "\" font-size=\"10\" fill=\"#567\">" + html_escape(m.label) + "</text>";
      last_label_x = x;
    }
  }
  const double plot_y_scale = y_scale;
  size_t i = 0;
  for (const auto& [key, lines] : series) {
    const char* color = kColors[i % std::size(kColors)];
    out += polyline(lines.first, t0, x_scale, y_scale, color, false);
    const bool any_reserved = std::any_of(lines.second.points.begin(), lines.second.points.end(),
                                          [](const auto& p) { return p.second != 0; });
    if (any_reserved) out += polyline(lines.second, t0, x_scale, y_scale, color, true);
    const double y = bottom + 36 + 20 * double(i);
    out += "<rect x=\"" + svg_px(kLeft) + "\" y=\"" + svg_px(y - 10) + "\" width=\"12\" height=\"12\" fill=\"" + color +
           "\"/>";
    out += label(kLeft + 18, y,
                 "pid " + std::to_string(std::get<0>(key)) + " " +
                     memory::device_name(std::get<1>(key), std::get<2>(key)) +
                     (any_reserved ? ": allocated (solid), reserved (dashed)" : ": allocated"),
                 "start");
    ++i;
  }
  // Each device's allocated peak, with the op that reached it.
  for (const memory::Peak& p : peaks) {
    if (!p.allocated_seen || p.allocated <= 0 || p.allocated_ns < t0 || p.allocated_ns > t1) continue;
    const double x = x_of(p.allocated_ns), y = kTop + kPlotHeight - double(p.allocated) * plot_y_scale;
    const std::string text = "peak " + memory::format_bytes(p.allocated, false) +
                             (p.allocated_op.empty() ? std::string() : " in " + p.allocated_op) + " (pid " +
                             std::to_string(p.pid) + " " + memory::device_name(p.device_type, p.device_index) + ")";
    out += "<circle class=\"memory-peak\" cx=\"" + svg_px(x) + "\" cy=\"" + svg_px(y) +
           "\" r=\"4\" fill=\"none\" stroke=\"#d33\" stroke-width=\"2\"><title>" + html_escape(text) +
           "</title></circle>";
    out += label(std::min(x + 6, double(kPlotWidth - kRight)), std::max(y - 6, kTop + 20), text,
                 x > kPlotWidth / 2.0 ? "end" : "start");
  }
  out += "<line id=\"memory-cursor\" x1=\"0\" y1=\"" + svg_px(kTop) + "\" x2=\"0\" y2=\"" + svg_px(bottom_y) +
         "\" stroke=\"#555\" visibility=\"hidden\"/>";
  out += "</svg><div id=\"memory-hover\">Hover over the plot for the values at a time.</div>";
  // The hover's data.
  std::string data = "{\"width\":" + std::to_string(kPlotWidth) + ",\"left\":" + svg_px(kLeft) +
                     ",\"right\":" + svg_px(kPlotWidth - kRight) +
                     ",\"span\":" + std::to_string(std::max<int64_t>(1, t1 - t0)) + ",\"series\":[";
  for (const auto& [key, lines] : series) {
    const bool any_reserved = std::any_of(lines.second.points.begin(), lines.second.points.end(),
                                          [](const auto& p) { return p.second != 0; });
    hover_series(
        data, "pid " + std::to_string(std::get<0>(key)) + " " + memory::device_name(std::get<1>(key), std::get<2>(key)),
        lines.first, lines.second, t0, x_scale, any_reserved);
  }
  out += "<script type=\"application/json\" id=\"memory-data\">" + data + "]}</script>";
  return out;
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

std::string memory_categories_html(const memory::Summary& s) {
  if (s.categories.empty()) return {};
  std::string out =
      "<p>Memory by category, torch's memory timeline rules (<code>ptprof memory --categories</code> has the "
      "timeline):</p>\n<table class=\"ops\" id=\"memory-categories\"><thead><tr><th>pid</th><th>Device</th>"
      "<th>At</th>";
  for (size_t c = 0; c < memory::kCategories; ++c)
    out += "<th>" + html_escape(std::string(memory::category_name(memory::Category(c)))) + "</th>";
  out += "<th>Total</th></tr></thead><tbody>";
  // The last step ends (where a leak shows) and the peaks.
  constexpr size_t kSteps = 20;
  size_t steps = 0;
  for (const memory::CategoryRow& r : s.categories) steps += r.peak ? 0 : 1;
  size_t skip = steps > kSteps ? steps - kSteps : 0;
  for (const memory::CategoryRow& r : s.categories) {
    if (!r.peak && skip) {
      --skip;
      continue;
    }
    out += "<tr><td>" + std::to_string(r.pid) + "</td><td>" +
           html_escape(memory::device_name(r.device_type, r.device_index)) + "</td><td>" +
           (r.peak ? std::string("peak") : "end of step " + std::to_string(r.step)) + "</td>";
    int64_t total = 0;
    for (int64_t v : r.bytes) {
      out += "<td data-v=\"" + std::to_string(v) + "\">" + html_escape(memory::format_bytes(v, false)) + "</td>";
      total += v;
    }
    out += "<td data-v=\"" + std::to_string(total) + "\">" + html_escape(memory::format_bytes(total, false)) +
           "</td></tr>";
  }
  return out + "</tbody></table>\n";
}

}  // namespace ptprof::html::detail
