// The HTML report's tables besides the operator table: the steps by phase and
// the comparison with a baseline run. Both are class "ops", so the page's
// script sorts them by a click on a title.
#pragma once
#include <cstddef>
#include <string>

#include "ptprof/analysis/report_html.hpp"

namespace ptprof::html::detail {

// One row per step with each phase's time, then the totals with their share
// of all steps' wall time. "" when there are no steps.
std::string phase_table(const report::Report& r);
// torch.compile's compile time by kind, per step, and its recompiles and
// graph breaks with their reasons; "" without a compile.
std::string compile_section(const report::CompileReport& c);
// The names whose time or count changed most since the baseline, at most
// `rows` of them.
std::string diff_table(const HtmlBaseline& b, size_t rows);
// The processes (with their roles), and for a distributed job the ranks,
// their collectives and the stragglers, as the text report has them
// (report_html_ranks.cpp). "" for one process without a rank.
std::string ranks_section(const report::RankSummary& s);

}  // namespace ptprof::html::detail
