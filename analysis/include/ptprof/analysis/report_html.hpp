// The report as one self-contained HTML page (no network, no external file):
// run metadata and drops at the top, the per-step time breakdown, the steps
// by phase and the top operators as SVG plots drawn here, then the operator
// table with the report's columns, sortable by clicking a column's title;
// given a baseline, a section comparing the run with it (diff.hpp); given the
// memory summary of traces recorded with --profile-memory, a plot of
// allocated and reserved memory over time (memory.hpp); given the events
// themselves (HtmlEvents), a timeline of every process and thread, flame
// graphs of the recorded stacks and step markers on the memory plot.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "ptprof/analysis/diff.hpp"
#include "ptprof/analysis/memory.hpp"
#include "ptprof/analysis/report.hpp"

namespace ptprof::html {

// What `ptprof diff BASELINE RUN` computes, with the baseline's inputs.
struct HtmlBaseline {
  diff::Diff diff;  // A: the baseline, B: the reported run
  std::vector<std::string> files;
  size_t rows = 30;  // rows shown: the most changed names
};

// The events the page draws (its timeline, its flame graphs), gathered one
// trace at a time: a window of millions of events keeps a bounded part of
// them (the longest), and the page says how many it left out.
class HtmlEvents {
 public:
  HtmlEvents();
  ~HtmlEvents();
  HtmlEvents(const HtmlEvents&) = delete;
  HtmlEvents& operator=(const HtmlEvents&) = delete;

  void add(const trace::Trace& t);  // need not outlive the call

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

std::string render_html(const report::Report& r, const HtmlBaseline* baseline = nullptr,
                        const memory::Summary* memory = nullptr, const HtmlEvents* events = nullptr);

}  // namespace ptprof::html
