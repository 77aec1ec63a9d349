// Exports of trace files to the formats trace viewers and analysis tools read:
// Chrome trace JSON in Kineto's schema (what torch.profiler's
// export_chrome_trace writes: Perfetto UI, chrome://tracing, Holistic Trace
// Analysis) and Perfetto's protobuf TrackEvent format. The layout of each is
// docs/export.md.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptprof/status.hpp"

namespace ptprof::exporting {

struct ExportResult {
  std::vector<std::string> files;     // written, in order
  uint64_t events = 0;                // trace events written (all files together)
  std::vector<std::string> warnings;  // damaged inputs read in part, parts over the limit
};

struct ChromeOptions {
  // 0: one file. Otherwise the export is split at ProfilerStep boundaries
  // into parts whose JSON text stays within this many bytes (a step bigger
  // than the limit gets a part of its own, with a warning); every part is a
  // whole trace with its own metadata. Parts are named after `out` with
  // ".partNNN" before ".json" or ".json.gz"; one part keeps `out` itself.
  uint64_t max_file_size = 0;
};

// Streams the events of `trace_files` (merged, in any order) into `out`,
// gzip-compressed when it ends in ".gz". Memory does not grow with the trace.
// An error names the file and what was wrong.
Result<ExportResult> export_chrome(const std::vector<std::string>& trace_files, const std::string& out,
                                   const ChromeOptions& options);

// Writes `trace_files` (merged) as one Perfetto protobuf trace: a track per
// process and per thread, interned names, BEGIN/END slices.
Result<ExportResult> export_perfetto(const std::vector<std::string>& trace_files, const std::string& out);

// "123", "64K", "500M", "2G" (powers of 1024) to bytes; nullopt otherwise.
std::optional<uint64_t> parse_byte_size(std::string_view text);

}  // namespace ptprof::exporting
