// Fuzz target: a trace file of arbitrary bytes, as `ptprof report`, `info`,
// `export` and `diff` read it. Whatever the bytes, reading must end with a
// trace or an error (never a crash, a hang or undefined behaviour), the three
// readers must agree, and every report computed from what was read must
// render.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "memory_file.hpp"
#include "ptprof/analysis/diff.hpp"
#include "ptprof/analysis/report.hpp"
#include "ptprof/analysis/report_format.hpp"
#include "ptprof/analysis/report_html.hpp"
#include "ptprof/analysis/report_phases.hpp"
#include "ptprof/analysis/trace_file.hpp"
#include "trace_chunks.hpp"

namespace {

using namespace ptprof;

// A property the readers promise was broken: stop with a crash libFuzzer
// records, like a sanitizer finding.
void require(bool ok) {
  if (!ok) std::abort();
}

void report_on(const trace::Trace& t, const std::string& path) {
  for (bool by_shape : {false, true}) {
    report::Options o;
    o.group_by_input_shape = by_shape;
    o.sort_by = by_shape ? report::SortKey::SelfCpuTimeTotal : report::SortKey::CpuTimeTotal;
    report::Report r = report::compute_report({report::Input{path, &t}}, o);
    (void)report::render_table(r, 0);
    (void)report::render_csv(r, 20);
    (void)report::render_json(r, 0);
    (void)report::drops_warning(r);
    (void)html::render_html(r);
    diff::Diff d = diff::compare(r, r, diff::SortKey::SelfCpuTime);
    (void)diff::render_table(d, 0);
    (void)diff::render_json(d, 0);
  }
  (void)report::phase_totals(report::step_phases(t));
  (void)report::compile_report(t);
}

// Reads the file three ways, checks that they agree, reports on it.
void read_and_report(const std::string& path) {
  std::vector<std::string> warnings;
  auto full = format::read_trace(path, &warnings);

  std::vector<std::string> summary_warnings;
  auto summary = format::read_trace_summary(path, &summary_warnings);

  uint64_t streamed = 0;
  std::vector<std::string> stream_warnings;
  auto stream = format::read_trace_streaming(
      path, [&](const trace::Trace&, const std::vector<trace::Event>& events) { streamed += events.size(); },
      &stream_warnings);

  // The streaming reader decodes what the whole reader decodes.
  require(bool(full) == bool(stream));
  if (!full) return;
  require(streamed == full->events.size());
  require(full->threads.size() == stream->threads.size());
  for (size_t i = 0; i < full->threads.size(); ++i) require(full->threads[i].events == stream->threads[i].events);

  // Every index an event holds is one the trace has: the report relies on it.
  for (const trace::Event& e : full->events) {
    require(e.thread < full->threads.size());
    require(e.name < full->strings.size());
    require(e.shapes < full->strings.size());
  }
  for (const trace::Thread& th : full->threads) require(th.process < full->processes.size());

  report_on(*full, path);
}

}  // namespace

// libFuzzer's entry point: its name is fixed.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {  // NOLINT(readability-identifier-naming)
  static fuzz::MemoryFile file("ptprof-fuzz-trace");
  file.assign(data, size);
  read_and_report(file.path());
  // The same bytes with every checksum made right: what a mutation changed
  // reaches the decoders instead of stopping at the CRC.
  std::string repaired(reinterpret_cast<const char*>(data), size);
  fuzz::repair_checksums(repaired);
  if (repaired != std::string_view(reinterpret_cast<const char*>(data), size)) {
    file.assign(reinterpret_cast<const uint8_t*>(repaired.data()), repaired.size());
    read_and_report(file.path());
  }
  return 0;
}
