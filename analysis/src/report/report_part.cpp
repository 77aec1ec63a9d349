#include "report/report_part.hpp"

#include <algorithm>
#include <optional>

#include "ptprof/analysis/trace_file.hpp"
#include "ptprof/cuda_status.hpp"
#include "report/report_stream.hpp"

namespace ptprof::report::detail {

namespace {

bool in_window(const trace::Trace& t, const Options& options) {
  return !options.window || t.header.window == *options.window;
}

// What every trace adds besides its rows and ranks, streamed or not.
void add_common(const trace::Trace& t, FilePart& part) {
  part.phases = step_phases(t);
  part.compile = compile_report(t);
}

}  // namespace

FilePart trace_part(const trace::Trace& t, uint32_t input, const Options& options) {
  FilePart part(options);
  part.in_window = in_window(t, options);
  if (!part.in_window) return part;
  // The agent's CUDA notes are lines of the report, not events of the program.
  part.events = t.events.size() - uint64_t(std::count_if(t.events.begin(), t.events.end(), [&](const trace::Event& e) {
                  return wire::is_cuda_note(t, e);
                }));
  part.cost = cost::tally(t);
  part.rows.add_trace(input, t);
  part.ranks.add(t);
  add_common(t, part);
  return part;
}

Result<FilePart> file_part(const std::string& path, uint32_t input, const Options& options, bool phases,
                           std::vector<std::string>* warnings) {
  auto streamed = stream_trace(path, input, options, phases, warnings);
  if (!streamed) return streamed.status();
  if (!*streamed) {  // this trace needs all its events at once
    auto t = format::read_trace(path, warnings);
    if (!t) return t.status();
    FilePart part = trace_part(*t, input, options);
    if (part.in_window)
      part.trace = std::move(*t);
    else
      part.trace.header = t->header;
    return part;
  }
  StreamedTrace& s = **streamed;
  FilePart part(options);
  part.in_window = in_window(s.metadata, options);
  if (!part.in_window) {
    part.trace.header = s.metadata.header;
    return part;
  }
  part.events = s.events;
  part.cost = s.cost;
  part.rows.add_streamed(s);
  part.ranks.add_counted(s.metadata, s.processes);
  part.trace = std::move(s.metadata);
  add_common(part.trace, part);  // its only events: the agent's notes on CUDA, lines of the GPU section
  part.phases.insert(part.phases.end(), s.phases.begin(), s.phases.end());
  return part;
}

}  // namespace ptprof::report::detail
