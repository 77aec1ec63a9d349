// The report as one self-contained HTML page (no network, no external file):
// run metadata and drops at the top, the per-step time breakdown, the steps
// by phase and the top operators as SVG plots drawn here, then the operator
// table with the report's columns, sortable by clicking a column's title;
// given a baseline, a section comparing the run with it (diff.hpp); given the
// memory summary of traces recorded with --profile-memory, a plot of
// allocated and reserved memory over time (memory.hpp).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "ptprof/analysis/diff.hpp"
#include "ptprof/analysis/memory.hpp"
#include "ptprof/analysis/report.hpp"

namespace ptprof::report {

// What `ptprof diff BASELINE RUN` computes, with the baseline's inputs.
struct HtmlBaseline {
  diff::Diff diff;  // A: the baseline, B: the reported run
  std::vector<std::string> files;
  size_t rows = 30;  // rows shown: the most changed names
};

std::string render_html(const Report& r, const HtmlBaseline* baseline = nullptr,
                        const memory::Summary* memory = nullptr);

}  // namespace ptprof::report
