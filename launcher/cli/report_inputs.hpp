// Reading the traces a report-like command is given: files and directories
// (their *.bin files), one trace at a time, readers' warnings logged. Shared
// by `report` and `diff` so both sides of a comparison are read alike.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ptprof/analysis/diff.hpp"
#include "ptprof/analysis/report.hpp"
#include "ptprof/status.hpp"

namespace ptprof::cli {

using TraceVisitor = std::function<void(const std::string& path, const trace::Trace& t)>;

// Hands each trace of `paths` to `add` and frees it; warnings are logged as
// "<command>: ...". Fails on the first input that cannot be read.
Status read_traces(const std::vector<std::string>& paths, std::string_view command, const TraceVisitor& add);

// Adds each trace of `paths` to `builder` as it reads it (ReportBuilder::
// add_files: a trace's events are not held when it can do without), several
// files at once (report_threads()); `windows`, if given, gets each trace's
// window. Warnings as read_traces, in file order.
Status add_traces(const std::vector<std::string>& paths, std::string_view command, report::ReportBuilder& builder,
                  bool phases, std::vector<uint32_t>* windows);

// How many files add_traces reads at once: PTPROF_REPORT_THREADS when set
// to a number from 1 (one after the other) up, else the machine's cores, at
// most 8 (each holds a decoded trace).
unsigned report_threads();

// One side of a comparison (`diff`, `report --baseline`): the report of
// `paths` merged, by name, and how the side was recorded.
struct ComparedSide {
  report::Report report;
  diff::SideInfo info;
};
Result<ComparedSide> read_compared_side(const std::vector<std::string>& paths, std::string_view command);

}  // namespace ptprof::cli
