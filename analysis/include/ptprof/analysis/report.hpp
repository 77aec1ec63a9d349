// Operator tables with torch.profiler's key_averages() semantics, computed as
// a pure function of decoded traces; report_format.hpp renders the result.
//
// As in torch (autograd/profiler_util.py, 1.13): events nest by time on each
// thread; an event's self time is its duration minus its direct children's;
// a child with its parent's name that is the parent's only child is folded
// into it (_remove_dup_nodes); `ProfilerStep#N` is keyed `ProfilerStep*`; the
// profiler's own helper ops are left out (_filter_name); async events have no
// children and no self time; percentages are of the sum of all self CPU time.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptprof/analysis/report_compile.hpp"
#include "ptprof/analysis/report_cuda_api.hpp"
#include "ptprof/analysis/report_gpu.hpp"
#include "ptprof/analysis/report_phases.hpp"
#include "ptprof/analysis/report_ranks.hpp"
#include "ptprof/cost.hpp"
#include "ptprof/status.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::report {

namespace detail {
struct FilePart;
}

// torch's sort_by keys, in the order torch documents them.
enum class SortKey : uint8_t {
  CpuTime,
  CudaTime,
  CpuTimeTotal,
  CudaTimeTotal,
  SelfCpuTimeTotal,
  SelfCudaTimeTotal,
  CpuMemoryUsage,
  SelfCpuMemoryUsage,
  CudaMemoryUsage,
  SelfCudaMemoryUsage,
  Count,
};
std::optional<SortKey> parse_sort_key(std::string_view name);
std::string_view sort_key_name(SortKey key);
const std::vector<std::string_view>& sort_key_names();  // all accepted names

struct Options {
  SortKey sort_by = SortKey::CpuTimeTotal;
  bool group_by_input_shape = false;
  // > 0: one row per (name, first N entries of the Python stack), with a
  // Source Location column, as key_averages(group_by_stack_n=N).
  uint32_t group_by_stack_n = 0;
  // Inductor's kernels folded onto the aten ops they were fused from: a row
  // named `<kernel> [aten.a, aten.b]` (the bootstrap's, docs/report.md) is
  // keyed "aten::a + aten::b" ("aten::a" alone: the eager op's row).
  bool group_by_compiled_source = false;
  std::optional<uint32_t> window;  // only traces of this window; nullopt merges all
};

// One trace to report on, with the name it is reported under.
struct Input {
  std::string path;
  const trace::Trace* trace = nullptr;
};

// What one row aggregates. Times in ns. The CUDA and memory fields are the
// places later collectors fill; a column shows once any row has data.
struct Stats {
  uint64_t count = 0;
  int64_t cpu_total_ns = 0;
  int64_t self_cpu_ns = 0;
  int64_t cuda_total_ns = 0;
  int64_t self_cuda_ns = 0;
  int64_t cpu_memory = 0;
  int64_t self_cpu_memory = 0;
  int64_t cuda_memory = 0;
  int64_t self_cuda_memory = 0;

  double cpu_time_avg_ns() const { return count ? double(cpu_total_ns) / double(count) : 0.0; }
  double cuda_time_avg_ns() const { return count ? double(cuda_total_ns) / double(count) : 0.0; }
};

struct Row {
  std::string name;                // torch's key (ProfilerStep#N becomes ProfilerStep*)
  std::string input_shapes;        // "[[4, 3], [3]]" when grouping by input shape ("[]" if none), else ""
  std::vector<std::string> stack;  // group_by_stack_n: the key's stack entries, "file(line): function", innermost first
  bool is_async = false;           // as the key's first event: its CPU total % shows 0
  Stats stats;
};

// One ProfilerStep#N span on one thread, or the time before the first step
// or after the last (Report::outside_steps).
struct StepRow {
  enum class Role : uint8_t { Step, BeforeSteps, AfterSteps };
  uint64_t step = 0;
  int32_t pid = 0;
  int32_t tid = 0;
  int64_t wall_ns = 0;      // the span of the ProfilerStep#N event
  int64_t operator_ns = 0;  // top-level Op/Range events inside it on its thread
  Role role = Role::Step;
  bool partial = false;  // the process was killed in this step: the part that ran
};

struct ThreadDrops {
  std::string path;
  int32_t pid = 0;
  int32_t tid = 0;
  std::string thread_name;
  uint64_t dropped = 0;
};

struct Report {
  Options options;
  std::vector<std::string> files;  // inputs that matched the window
  std::vector<uint32_t> windows;   // their windows, sorted, unique
  std::vector<Row> rows;           // every key, sorted by options.sort_by
  int64_t self_cpu_total_ns = 0;   // the base of both CPU % columns
  int64_t self_cuda_total_ns = 0;
  bool has_cuda_time = false;
  bool has_memory = false;
  bool has_cuda_memory = false;
  bool has_input_shapes = false;
  bool has_stack = false;      // some row has stack entries: the Source Location column
  std::vector<StepRow> steps;  // by step, then pid, tid
  // The time before the first step (the setup) and after the last: no steps,
  // kept out of `steps`, the ProfilerStep* row and the step counts.
  std::vector<StepRow> outside_steps;
  std::vector<StepPhases> phases;  // the same steps split into phases, same order
  CompileReport compile;           // torch.compile's compile time and notes (report_compile.hpp)
  std::vector<ThreadDrops> drops;  // threads with dropped > 0
  uint64_t events = 0;             // events in the inputs that matched
  uint64_t dropped = 0;
  trace::Losses losses;              // the inputs' ledgers, summed
  std::vector<CudaApiRow> cuda_api;  // CUDA API summary; empty when no CUDA call was recorded
  GpuReport gpu;                     // kernels, memory operations, utilisation... (report_gpu.hpp)
  RankSummary ranks;                 // the processes, and the ranks of a distributed job
  cost::Tally cost;                  // what recording these events cost the program (ptprof/cost.hpp)
};

// Builds a report one trace at a time, so a caller can read, add and free
// each file in turn instead of holding every window in memory.
class ReportBuilder {
 public:
  explicit ReportBuilder(const Options& options);
  ~ReportBuilder();
  ReportBuilder(const ReportBuilder&) = delete;
  ReportBuilder& operator=(const ReportBuilder&) = delete;

  // Adds a trace (skipped unless it is of options.window, when that is set).
  // The trace need not outlive the call.
  void add(const std::string& path, const trace::Trace& t);
  // Reads the trace at `path` and adds it as add() would, aggregating as it
  // reads: without holding its events, unless the trace needs them all at once
  // (CUDA or memory records, --group-by-stack-n, collectives, events that do
  // not nest in the order the launcher writes them, or steps when `phases`
  // are wanted). Returns the trace's window; errors and warnings are
  // read_trace's.
  Result<uint32_t> add_file(const std::string& path, std::vector<std::string>* warnings, bool phases = true);
  // add_file for each of `paths` in turn, with the same report, up to
  // `threads` files read and computed at once (0 or 1: one after the other)
  // and added in path order; at most threads + 1 are held at once. Each
  // file's warnings go to `warned` in path order; the first error is
  // returned after its file's warnings, and no later file is added.
  // `windows`: the window of each file added.
  Status add_files(const std::vector<std::string>& paths, bool phases, unsigned threads,
                   const std::function<void(std::vector<std::string>& warnings)>& warned,
                   std::vector<uint32_t>* windows);
  Report finish() &&;

 private:
  void add_part(const std::string& path, const trace::Trace& t, detail::FilePart&& part);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The same, for traces already in memory.
Report compute_report(const std::vector<Input>& inputs, const Options& options);

}  // namespace ptprof::report
