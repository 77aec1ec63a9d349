// The cells of the page's sortable tables: each carries its value in
// data-v (what the page's sort compares) and shows it formatted.
#pragma once
#include <cstdint>
#include <string>

#include "html/report_html_plots.hpp"
#include "ptprof/analysis/report_format.hpp"

namespace ptprof::html::detail {

// A time; `suffix` follows it (a share, " (12%)").
inline std::string time_cell(int64_t ns, const std::string& suffix = "") {
  return "<td data-v=\"" + std::to_string(ns) + "\">" + report::format_time_us(double(ns) / 1000.0) + suffix + "</td>";
}

// A count; with `sign`, a positive one shows its "+" (a difference).
inline std::string int_cell(int64_t v, bool sign = false) {
  return "<td data-v=\"" + std::to_string(v) + "\">" + (sign && v > 0 ? "+" : "") + std::to_string(v) + "</td>";
}

inline std::string text_cell(const std::string& s) { return "<td>" + html_escape(s) + "</td>"; }

}  // namespace ptprof::html::detail
