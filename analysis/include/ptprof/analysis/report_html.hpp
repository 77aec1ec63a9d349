// The report as one self-contained HTML page (no network, no external file):
// run metadata and drops at the top, the per-step time breakdown and the top
// operators as SVG plots drawn here, then the operator table with the
// report's columns, sortable by clicking a column's title.
#pragma once
#include <string>

#include "ptprof/analysis/report.hpp"

namespace ptprof::report {

std::string render_html(const Report& r);

}  // namespace ptprof::report
