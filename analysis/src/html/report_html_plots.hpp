// The HTML report's plots, as inline SVG.
#pragma once
#include <string>

#include "ptprof/analysis/memory.hpp"
#include "ptprof/analysis/report.hpp"

namespace ptprof::html::detail {

// The width of every plot on the page, in SVG user units (its CSS scales it).
inline constexpr int kPlotWidth = 860;
// An SVG coordinate or length: one decimal is finer than a pixel.
std::string svg_px(double v);

// One stacked bar per step (and thread): operator time and the rest of the
// step's wall time. "" when there are no steps.
std::string step_breakdown_svg(const report::Report& r);
// One bar per step (and thread) stacked by phase (report_phases.hpp). ""
// when there are no steps.
std::string phase_breakdown_svg(const report::Report& r);
// Horizontal bars of the operators with the most self CPU time.
std::string top_operators_svg(const report::Report& r, size_t count);

// A time the memory plot marks (a step's start) and its label.
struct StepMarker {
  int64_t ns = 0;
  std::string label;
};

// Allocated (solid) and reserved (dashed) bytes over time, per process and
// device, the steps' starts and each device's allocated peak marked, then the
// hover's line and data (report_html_memory.cpp). "" without points.
std::string memory_timeline_svg(const std::vector<memory::TimelinePoint>& timeline,
                                const std::vector<memory::Peak>& peaks, const std::vector<StepMarker>& steps);
// One line per op whose memory grows step over step (`ptprof memory`'s
// growth table) and per failed CUDA allocation; "" when neither.
std::string memory_growth_html(const memory::Summary& s);
// Memory by category at the last step ends and the peaks; "" when none.
std::string memory_categories_html(const memory::Summary& s);

// Text for HTML element content and attribute values.
std::string html_escape(std::string_view s);

}  // namespace ptprof::html::detail
