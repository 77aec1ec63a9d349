// One trace event as a line of Chrome trace JSON in Kineto's schema: the
// phase, category, pid/tid, microsecond ts/dur and args that torch.profiler's
// export_chrome_trace writes for the same kind of event, so viewers and HTA
// treat both alike.
#pragma once
#include <charconv>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "export/gpu_event_args.hpp"
#include "export/launch_links.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::exporting::detail {

// Kineto's category of an event: cpu_op for operators, user_annotation for
// record_function scopes, ptprof ranges, marks and ProfilerStep spans;
// a CUDA call's is its API's (cuda_runtime, cuda_driver: `cuda`'s family).
std::string_view chrome_category(const trace::Event& e, const trace::CudaInfo* cuda = nullptr);

// torch's shapes text ("[[4, 3], [], ...]") as a JSON list of lists of ints
// ("[[4,3],[]]"); `truncated` is set when the text ended in "...". "" when the
// text is not of that form.
std::string input_dims_json(std::string_view shapes_text, bool* truncated);

// "123.456": ns as microseconds with three decimals (exact, sign kept).
void append_us(std::string& out, int64_t ns);

// Appends ,"key":v (a number) to an args object.
template <typename Number>
void append_number_arg(std::string& out, std::string_view key, Number v) {
  out += ",\"";
  out += key;
  out += "\":";
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// Appends each arg as ,"name":value (texts as JSON strings, grids and
// blocks as [x,y,z]) to an args object.
void append_json_args(std::string& out, const std::vector<EventArg>& args);

class ChromeEventFormatter {
 public:
  // Timestamps are written relative to `base_wall_ns` (baseTimeNanoseconds).
  // CUDA events name their launching op and carry their ac2g flow ends from
  // `links` (the first pass's; none: no links drawn).
  explicit ChromeEventFormatter(int64_t base_wall_ns, const LaunchLinks* links = nullptr)
      : base_wall_ns_(base_wall_ns), links_(links) {}

  // The GPUs of the inputs (InputSummary::gpu_devices): kernels on one of
  // them get Kineto's occupancy args (kernel_occupancy.hpp).
  void set_devices(const std::vector<trace::GpuDevice>& devices) { gpu_args_.set_devices(devices); }
  // Before the events of each input file: name and thread ids are per file.
  void begin_file(int64_t realtime_offset_ns);
  // Appends `e` as one JSON object (no separator). `id` becomes its
  // "External id" (ids are unique in the export; a CUDA call and its GPU
  // work take their launching op's, as in torch.profiler's) and `id - 1` its
  // "Ev Idx". A CUDA event is followed by its ac2g flow end, if it has one.
  void append(std::string& out, const trace::Trace& metadata, const trace::Event& e, uint64_t id);

  // A "fwdbwd" flow event bound to op `e` (fwdbwd_flows.hpp), as Kineto
  // writes it: at the op's start, on its thread.
  // The same shape serves the ac2g flows (category "ac2g", named alike).
  void append_flow(std::string& out, const trace::Trace& t, const trace::Event& e, bool start, uint64_t flow_id,
                   std::string_view category = "fwdbwd");

  // Wall-clock ns of an event time, as the export places it.
  int64_t wall_ns(int64_t monotonic_ns) const { return monotonic_ns + realtime_offset_ns_; }

 private:
  const std::string& name_json(const trace::Trace& t, uint32_t id);
  const std::string& dims_json(const trace::Trace& t, uint32_t id);
  const std::string& pid_tid_json(const trace::Trace& t, uint32_t thread);
  // torch's "Call stack" arg of an op recorded with its stack: its Python
  // entries, innermost first, joined by ';'; "" when it has none.
  const std::string& stack_json(const trace::Trace& t, uint32_t stack);
  // A Memory event as Kineto writes it (chrome_memory_event.cpp).
  void append_memory(std::string& out, const trace::Trace& t, const trace::Event& e, uint64_t id);
  // A CUDA call's or GPU work's args after "Ev Idx", under Kineto's names
  // (gpu_event_args.hpp; chrome_gpu_event.cpp).
  void append_cuda_args(std::string& out, const trace::Trace& t, const trace::Event& e);
  // The ac2g flow end of a CUDA call or its GPU work, on the event's track at its start.
  void append_launch_flow(std::string& out, const trace::Trace& t, const trace::Event& e, uint64_t export_id);
  // A collective op's facts (Trace::collectives) under Kineto's arg names.
  void append_collective(std::string& out, const trace::Trace& t, const trace::Event& e);

  int64_t base_wall_ns_;
  const LaunchLinks* links_;
  GpuEventArgs gpu_args_;
  std::vector<EventArg> args_;  // the current event's, reused
  int64_t realtime_offset_ns_ = 0;
  // Per-file caches, indexed by string or thread id: formatting a name once
  // per file instead of once per event is most of the export's speed.
  std::vector<std::string> names_, dims_, pid_tids_, stacks_;
  std::vector<uint8_t> dims_truncated_;
  // The file's collective facts by (thread, start), for the count of
  // Trace::collectives they were built from (a streamed file's grow).
  std::map<std::pair<uint32_t, int64_t>, const trace::CollectiveInfo*> collectives_;
  size_t collectives_seen_ = 0;
};

}  // namespace ptprof::exporting::detail
