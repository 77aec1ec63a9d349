// The GPU side of a report, in the manner of `nsys stats`: kernels, memory
// operations, CUPTI's overhead (apart: never part of kernel time), CUDA-graph
// kernels per node, GPU utilisation and launch latency. Computed from the
// CUDA events of decoded traces (trace.hpp: EventKind 5..11, Trace::cuda).
//
// Joins are strictly by id and within one trace (one process, one window):
// GPU work belongs to the op whose Event::arg equals its CudaInfo::external_id;
// a kernel's launch is the CudaApi (else CuptiApi) event with its
// correlation id.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ptprof/trace.hpp"

namespace ptprof::report {

// Distribution of a set of values (ns or bytes), as nsys prints them.
struct Distribution {
  uint64_t count = 0;
  int64_t total = 0;
  double avg = 0;
  double med = 0;  // of an even count: the mean of the two middle values
  int64_t min = 0;
  int64_t max = 0;
  double stddev = 0;  // sample standard deviation (n - 1), 0 for one value
};
Distribution distribution(std::vector<int64_t> values);

struct KernelRow {  // one (name, grid, block)
  std::string name;
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  Distribution time_ns;
};

struct MemoryOpRow {  // one name, Kineto's: "Memcpy HtoD (Pageable -> Device)", "Memset (Device)"
  std::string name;
  Distribution time_ns;
  Distribution bytes;
};

struct OverheadRow {
  std::string name;
  Distribution time_ns;
};

struct GraphNodeRow {  // kernels launched from a CUDA graph, one row per node
  int32_t pid = 0;
  uint32_t graph_id = 0;  // CUPTI's id of the graph the kernel ran in; 0 = not recorded (earlier traces)
  uint64_t node_id = 0;   // CUPTI's graph node ids are unique within a process
  std::string name;
  Distribution time_ns;
};

// The op a CUDA graph's work came from, with how much of it (over all
// replays). Not an op: "captured outside the window" (the node was made
// while ptprof did not record CUDA), "(no op)" (no op was open at the
// capture), "(capture not recorded)" (traces written before captures were).
struct GraphOpShare {
  std::string op;
  uint64_t kernels = 0;
};

struct GraphRow {  // one CUDA graph of one process, over its replays
  int32_t pid = 0;
  uint32_t graph_id = 0;
  uint64_t replays = 0;  // the cudaGraphLaunch calls its kernels ran under (one correlation id each)
  uint64_t kernels = 0;
  double kernels_per_replay = 0;
  Distribution replay_ns;         // per replay: its first kernel's start to its last kernel's end
  int64_t kernel_ns = 0;          // the kernels' time, all replays
  std::vector<GraphOpShare> ops;  // most kernels first, then by name
};

struct DeviceUtilRow {  // one device of one process over the traced windows
  int32_t pid = 0;
  int32_t device = 0;
  int64_t busy_ns = 0;  // union of kernel, memcpy and memset intervals
  int64_t span_ns = 0;  // the windows' duration
};

struct StreamUtilRow {  // one stream of one device of one process over the traced windows
  int32_t pid = 0;
  int32_t device = 0;
  uint64_t stream = 0;
  int64_t busy_ns = 0;  // union of the stream's kernel, memcpy and memset intervals
  int64_t span_ns = 0;
};

struct StepUtilRow {
  uint64_t step = 0;
  int32_t pid = 0;
  int32_t device = 0;
  int64_t busy_ns = 0;  // within the step's span
  int64_t step_ns = 0;
};

struct LaunchLatency {  // kernel start minus the start of its launch call
  uint64_t count = 0;
  uint64_t without_launch = 0;  // kernels whose launch call was not in the trace
  int64_t min_ns = 0, p50_ns = 0, p90_ns = 0, p99_ns = 0, max_ns = 0;
  double avg_ns = 0;
};

struct GpuReport {
  std::vector<KernelRow> kernels;         // by total time, descending
  std::vector<MemoryOpRow> memory_ops;    // by total time, descending
  std::vector<OverheadRow> overheads;     // by total time, descending
  std::vector<GraphNodeRow> graph_nodes;  // by pid, graph, node
  std::vector<GraphRow> graphs;           // by pid, graph
  std::vector<DeviceUtilRow> devices;     // by pid, device
  std::vector<StreamUtilRow> streams;     // by pid, device, stream
  std::vector<StepUtilRow> steps;         // by step, pid, device
  LaunchLatency launch;
  int64_t kernel_total_ns = 0;
  uint64_t matched = 0;            // kernels, copies and sets joined to an op
  uint64_t unmatched_kernels = 0;  // kernels no op of their process claims
  int64_t unmatched_kernel_ns = 0;
  uint64_t unmatched_memory_ops = 0;
  // Graph work (kernels, copies, sets replayed from a CUDA graph) attributed
  // by its capture, whether or not the capturing op is in the same trace;
  // of it, captured outside the window. Never counted unmatched.
  uint64_t graph_work = 0;
  uint64_t graph_work_outside = 0;
  std::vector<std::string> notes;  // the agents' lines on CUDA (cuda_status.hpp), distinct

  bool any() const { return !kernels.empty() || !memory_ops.empty() || !overheads.empty() || !notes.empty(); }
};

// Accumulates traces one at a time (like ReportBuilder).
class GpuReportBuilder {
 public:
  GpuReportBuilder();
  ~GpuReportBuilder();
  GpuReportBuilder(const GpuReportBuilder&) = delete;
  GpuReportBuilder& operator=(const GpuReportBuilder&) = delete;

  void add(const trace::Trace& t);
  GpuReport finish() &&;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Text sections (after the op table), the same sections as CSV blocks (each
// after an empty line: a title line, a header line, the rows), and the "gpu"
// JSON object.
std::string render_gpu_sections(const GpuReport& g);
std::string render_gpu_csv(const GpuReport& g);
std::string render_gpu_json(const GpuReport& g);

}  // namespace ptprof::report
