// `export --chrome`: trace files to Chrome trace JSON, streamed; no pass holds
// events. Two passes find the ProfilerStep spans and widen them to enclose
// their ops (step_spans.hpp); with a size limit, a third sizes each step's
// events as JSON; the last writes each event to the part its step was
// planned into.
#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

#include "export/chrome_document.hpp"
#include "export/chrome_event_format.hpp"
#include "export/export_inputs.hpp"
#include "export/fwdbwd_flows.hpp"
#include "export/launch_links.hpp"
#include "export/step_spans.hpp"
#include "ptprof/analysis/export.hpp"
#include "ptprof/analysis/trace_file.hpp"
#include "ptprof/cuda_status.hpp"

namespace ptprof::exporting {

using namespace detail;

namespace {

// Called with the index of the event's file in the inputs.
using EventVisitor = std::function<void(size_t, const trace::Trace&, const trace::Event&)>;

// Streams every event of every file through `visit`, telling `formatter`
// (when given) where each file begins.
Status for_each_event(const std::vector<std::string>& files, ChromeEventFormatter* formatter, const EventVisitor& visit,
                      std::vector<std::string>* warnings) {
  for (size_t i = 0; i < files.size(); ++i) {
    bool started = false;
    format::EventChunkSink sink = [&](const trace::Trace& meta, const std::vector<trace::Event>& events) {
      if (!started && formatter) formatter->begin_file(meta.header.realtime_offset_ns);
      started = true;
      for (const trace::Event& e : events)
        if (!wire::is_cuda_note(meta, e)) visit(i, meta, e);
    };
    PTPROF_RETURN_IF_ERROR(format::read_trace_streaming(files[i], sink, warnings));
  }
  return {};
}

struct Steps {
  StepSpans spans;
  std::vector<int64_t> boundaries;      // where parts may begin
  FwdBwdFlows flows;                    // found in the same pass as the steps' ends
  LaunchLinks launches;                 // likewise
  bool shapes = false, memory = false;  // some op has input shapes; memory events
};

// The steps of the inputs, widened; the boundaries are the wall-clock starts
// of the ProfilerStep spans of the thread with the most of them (the training
// loop's), sorted.
Result<Steps> find_steps(const std::vector<std::string>& files) {
  Steps steps;
  std::map<std::pair<int32_t, int32_t>, std::vector<int64_t>> by_thread;
  auto visit = [&](size_t file, const trace::Trace& t, const trace::Event& e) {
    if (e.kind != trace::EventKind::Step || e.thread >= t.threads.size()) return;
    steps.spans.add_step(file, e);
    const trace::Thread& th = t.threads[e.thread];
    int32_t pid = th.process < t.processes.size() ? t.processes[th.process].pid : 0;
    by_thread[{pid, th.tid}].push_back(e.start_ns + t.header.realtime_offset_ns);
  };
  PTPROF_RETURN_IF_ERROR(for_each_event(files, nullptr, visit, nullptr));
  steps.spans.sort();
  uint64_t id = 0;  // as the write pass numbers events
  auto cover = [&](size_t file, const trace::Trace& t, const trace::Event& e) {
    steps.spans.cover(file, e);
    steps.flows.see(t, e, ++id, e.start_ns + t.header.realtime_offset_ns);
    steps.launches.see(t, e, id);
    steps.shapes |= e.kind == trace::EventKind::Op && e.shapes != 0;
    steps.memory |= e.kind == trace::EventKind::Memory;
  };
  PTPROF_RETURN_IF_ERROR(for_each_event(files, nullptr, cover, nullptr));
  steps.flows.link();
  std::vector<int64_t>& best = steps.boundaries;
  for (auto& [key, starts] : by_thread)
    if (starts.size() > best.size()) best = std::move(starts);
  std::sort(best.begin(), best.end());
  best.erase(std::unique(best.begin(), best.end()), best.end());
  return steps;
}

// Bucket 0 holds what starts before the first step; bucket k the events from
// the start of step k-1 to the next.
size_t bucket_of(const std::vector<int64_t>& boundaries, int64_t wall_ns) {
  return size_t(std::upper_bound(boundaries.begin(), boundaries.end(), wall_ns) - boundaries.begin());
}

// Greedy: consecutive buckets share a part while its bytes stay within the
// limit. Returns each bucket's part.
std::vector<size_t> plan_parts(const std::vector<uint64_t>& bucket_bytes, uint64_t overhead, uint64_t limit,
                               size_t* parts) {
  std::vector<size_t> part_of(bucket_bytes.size(), 0);
  size_t part = 0;
  uint64_t used = overhead;
  bool empty = true;
  for (size_t b = 0; b < bucket_bytes.size(); ++b) {
    if (!empty && used + bucket_bytes[b] > limit) {
      ++part;
      used = overhead;
      empty = true;
    }
    part_of[b] = part;
    used += bucket_bytes[b];
    empty = empty && bucket_bytes[b] == 0;
  }
  *parts = part + 1;
  return part_of;
}

std::string part_path(const std::string& out, size_t index, size_t count) {
  if (count == 1) return out;
  char tag[32];
  std::snprintf(tag, sizeof tag, ".part%03zu", index + 1);
  for (std::string_view ext : {".json.gz", ".json"})
    if (out.ends_with(ext)) return out.substr(0, out.size() - ext.size()) + tag + std::string(ext);
  return out + tag;
}

}  // namespace

Result<ExportResult> export_chrome(const std::vector<std::string>& files, const std::string& out,
                                   const ChromeOptions& options) {
  ExportResult result;
  std::vector<std::string> ignored;  // the write pass reports each file's warnings once
  PTPROF_ASSIGN_OR_RETURN(InputSummary inputs, summarize_inputs(files, &ignored));
  if (inputs.ranks > 1)
    result.warnings.push_back("the inputs hold " + std::to_string(inputs.ranks) +
                              " ranks and the trace has no distributedInfo; HTA reads one rank per file: for HTA, "
                              "export each rank's files (<host>.r<rank>.*) to a file of its own");
  PTPROF_ASSIGN_OR_RETURN(const Steps steps, find_steps(files));
  ChromeEventFormatter formatter(inputs.base_wall_ns, &steps.launches);
  formatter.set_devices(inputs.gpu_devices);
  std::string line;
  inputs.record_shapes = steps.shapes;
  inputs.profile_memory = steps.memory;
  const std::vector<int64_t>& boundaries = steps.boundaries;
  // Formats one event, a step with its widened end, an op with the ends of
  // its fwdbwd flows after it.
  auto format_event = [&](size_t file, const trace::Trace& t, const trace::Event& e, uint64_t id) {
    line.clear();
    if (e.kind != trace::EventKind::Step) {
      if (const auto* inherited = steps.flows.inherited(id)) {
        trace::Event evaluate = e;
        std::tie(evaluate.seq_nr, evaluate.fwd_thread_id) = *inherited;
        formatter.append(line, t, evaluate, id);
      } else {
        formatter.append(line, t, e, id);
      }
      for (const FlowEnd& end : steps.flows.ends(id)) {
        line += ",\n";
        formatter.append_flow(line, t, e, end.start, end.id);
      }
      return;
    }
    trace::Event step = e;
    step.end_ns = steps.spans.end_of(file, e);
    formatter.append(line, t, step, id);
  };

  std::vector<size_t> part_of{0};
  std::vector<uint64_t> part_bytes;
  size_t parts = 1;
  if (options.max_file_size) {
    std::vector<uint64_t> bucket_bytes(boundaries.size() + 1, 0);
    uint64_t id = 0;
    auto size_event = [&](size_t file, const trace::Trace& t, const trace::Event& e) {
      format_event(file, t, e, ++id);
      bucket_bytes[bucket_of(boundaries, formatter.wall_ns(e.start_ns))] += line.size() + 2;
    };
    PTPROF_RETURN_IF_ERROR(for_each_event(files, &formatter, size_event, nullptr));
    // Part numbers change the preamble by a few bytes; size it for the largest.
    const std::string longest_path = part_path(out, 999998, 999999);
    uint64_t overhead = chrome_preamble(inputs, {999999, 999999, longest_path}).size() + kChromeEpilogue.size();
    part_of = plan_parts(bucket_bytes, overhead, options.max_file_size, &parts);
    part_bytes.assign(parts, overhead);
    for (size_t k = 0; k < bucket_bytes.size(); ++k) part_bytes[part_of[k]] += bucket_bytes[k];
  }

  std::vector<std::unique_ptr<ChromeDocument>> docs;
  for (size_t k = 0; k < parts; ++k) {
    std::string path = part_path(out, k, parts);
    PTPROF_ASSIGN_OR_RETURN(auto doc, ChromeDocument::create(path, inputs, {k, parts, path}));
    docs.push_back(std::move(doc));
    result.files.push_back(path);
  }
  uint64_t id = 0;
  auto write_event = [&](size_t file, const trace::Trace& t, const trace::Event& e) {
    format_event(file, t, e, ++id);
    size_t part = parts == 1 ? 0 : part_of[bucket_of(boundaries, formatter.wall_ns(e.start_ns))];
    docs[part]->add_event(line);
  };
  PTPROF_RETURN_IF_ERROR(for_each_event(files, &formatter, write_event, &result.warnings));
  for (auto& doc : docs) PTPROF_RETURN_IF_ERROR(doc->finish());
  result.events = id;
  for (size_t k = 0; k < part_bytes.size(); ++k)
    if (part_bytes[k] > options.max_file_size)
      result.warnings.push_back(result.files[k] + ": " + std::to_string(part_bytes[k]) +
                                " bytes of JSON, over the limit of " + std::to_string(options.max_file_size) +
                                ": one step's events alone take more (parts split only between steps)");
  return result;
}

std::optional<uint64_t> parse_byte_size(std::string_view text) {
  if (text.empty()) return std::nullopt;
  uint64_t multiplier = 1;
  switch (text.back()) {
    case 'K':
    case 'k':
      multiplier = 1ull << 10;
      break;
    case 'M':
    case 'm':
      multiplier = 1ull << 20;
      break;
    case 'G':
    case 'g':
      multiplier = 1ull << 30;
      break;
    default:
      break;
  }
  if (multiplier != 1) text.remove_suffix(1);
  if (text.empty() || text.size() > 12) return std::nullopt;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + uint64_t(c - '0');
  }
  return v * multiplier;
}

}  // namespace ptprof::exporting
