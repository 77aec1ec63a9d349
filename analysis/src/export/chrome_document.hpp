// One Chrome trace JSON file: the top-level fields Kineto writes, process and
// thread metadata events, then events streamed in one per line, so that
// line-oriented readers (HTA finds the rank with a regex over lines) work and
// nothing is held in memory.
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "export/export_inputs.hpp"
#include "ptprof/analysis/output_file.hpp"
#include "ptprof/status.hpp"

namespace ptprof::exporting::detail {

struct PartLabel {
  size_t index = 0;  // 0-based
  size_t count = 1;
  std::string_view path;  // the part's file: Kineto's "traceName"
};

// Everything before the first event: top-level fields, "traceEvents": [ and
// the metadata events (separated by ",\n"; it ends in '\n' when there are none).
// Kineto's "traceName" is the part's path, its "trace_id" 32 hex digits that
// name the trace: here a hash of what identifies the recording (host, time
// base, processes), the same for every part and every export of it.
std::string chrome_preamble(const InputSummary& inputs, const PartLabel& part);
// What closes the document.
constexpr std::string_view kChromeEpilogue = "\n]}\n";

class ChromeDocument {
 public:
  static Result<std::unique_ptr<ChromeDocument>> create(const std::string& path, const InputSummary& inputs,
                                                        const PartLabel& part);
  void add_event(std::string_view event_json);
  Status finish();

 private:
  std::unique_ptr<OutputFile> out_;
  std::string line_;
  bool need_separator_ = false;
};

}  // namespace ptprof::exporting::detail
