// One input's part of a report: everything ReportBuilder takes from a trace
// that does not depend on the other inputs, computed on its own so that
// several inputs can be computed at once (ReportBuilder::add_files) and then
// added up in input order, which gives what adding them one by one gives.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ptprof/analysis/report.hpp"
#include "ptprof/status.hpp"
#include "report/report_aggregator.hpp"

namespace ptprof::report::detail {

struct FilePart {
  explicit FilePart(const Options& o) : rows(o) {}
  // file_part's trace: whole, or without the events it was aggregated from
  // while read (then its events are the agent's notes on CUDA); only its
  // header out of the window. The sections not split into parts (GPU, CUDA
  // API) take it when the part is added.
  trace::Trace trace;
  bool in_window = true;  // false: the part holds the trace's window alone
  uint64_t events = 0;    // the agent's CUDA notes left out, as the report counts
  cost::Tally cost;
  Aggregator rows;
  RankSummaryBuilder ranks;
  std::vector<StepPhases> phases;
  CompileReport compile;
};

// The part of a trace in memory, input number `input` of the report
// (FilePart::trace stays empty: the caller has the trace).
FilePart trace_part(const trace::Trace& t, uint32_t input, const Options& options);

// The part of the trace at `path`, read as ReportBuilder::add_file reads it
// (see there for `phases` and `warnings`). An error is read_trace's.
Result<FilePart> file_part(const std::string& path, uint32_t input, const Options& options, bool phases,
                           std::vector<std::string>* warnings);

}  // namespace ptprof::report::detail
