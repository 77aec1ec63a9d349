// The CUDA side of the report on a hand-built trace, value by value: torch's
// CUDA columns (kernels joined to ops strictly by correlation, children's
// kernels in CUDA total, device rows as the base of Self CUDA %), and the
// nsys-stats-style sections: kernels by (name, grid, block), memory
// operations, overhead kept apart, graph nodes, unmatched work, utilisation
// per device, stream and step, launch latency from the hooked call or CUPTI's.
#include <catch2/catch.hpp>
#include <cmath>

#include "ptprof/analysis/report.hpp"
#include "ptprof/analysis/report_format.hpp"
#include "ptprof/analysis/report_html.hpp"

using namespace ptprof;
using trace::EventKind;

namespace {

struct GpuTrace {
  trace::Trace t;
  GpuTrace() {
    t.header.window_start_ns = 0;
    t.header.window_end_ns = 3000;
    t.processes.push_back({7, 1, "python", 0});
    t.threads.push_back({0, 70, "main", 0, 0, -1});
    t.threads.push_back({0, 7, "stream 7", 0, 0, 0});  // GPU lane: device 0, stream 7
  }
  uint32_t str(const std::string& s) {
    for (uint32_t i = 0; i < t.strings.size(); ++i)
      if (t.strings[i] == s) return i;
    t.strings.push_back(s);
    return uint32_t(t.strings.size() - 1);
  }
  void op(const std::string& name, int64_t s, int64_t e, uint64_t handle) {
    trace::Event ev;
    ev.kind = EventKind::Op;
    ev.name = str(name);
    ev.start_ns = s;
    ev.end_ns = e;
    ev.arg = handle;
    t.events.push_back(ev);
  }
  void cuda(EventKind kind, const std::string& name, int64_t s, int64_t e, uint32_t thread, trace::CudaInfo ci) {
    t.cuda.push_back(ci);
    trace::Event ev;
    ev.kind = kind;
    ev.name = str(name);
    ev.start_ns = s;
    ev.end_ns = e;
    ev.thread = thread;
    ev.arg = t.cuda.size();
    t.events.push_back(ev);
  }
  void launch(const std::string& name, int64_t s, int64_t e, uint64_t corr) {
    trace::CudaInfo ci;
    ci.correlation_id = corr;
    cuda(EventKind::CudaApi, name, s, e, 0, ci);
  }
  void kernel(const std::string& name, int64_t s, int64_t e, uint64_t corr, uint64_t op, uint32_t grid, uint32_t block,
              uint64_t graph_node = 0, uint32_t graph = 0) {
    trace::CudaInfo ci;
    ci.correlation_id = corr;
    ci.external_id = op;
    ci.grid[0] = grid;
    ci.grid[1] = ci.grid[2] = 1;
    ci.block[0] = block;
    ci.block[1] = ci.block[2] = 1;
    ci.device = 0;
    ci.graph_node_id = graph_node;
    ci.graph_id = graph;
    cuda(EventKind::Kernel, name, s, e, 1, ci);
  }
};

GpuTrace sample() {
  GpuTrace g;
  trace::Event step;
  step.kind = EventKind::Step;
  step.name = g.str("ProfilerStep#3");
  step.start_ns = 0;
  step.end_ns = 2000;
  step.arg = 3;
  g.t.events.push_back(step);
  g.op("aten::linear", 0, 1000, 1);
  g.op("aten::addmm", 100, 600, 2);
  g.launch("cudaLaunchKernel", 200, 300, 11);
  g.launch("cudaLaunchKernel", 350, 450, 12);
  g.op("aten::relu", 700, 900, 3);
  g.launch("cudaLaunchKernel", 710, 760, 13);
  g.op("aten::copy_", 1100, 1300, 4);
  g.launch("cudaMemcpyAsync", 1150, 1250, 14);
  g.op("aten::add", 1400, 1500, 5);
  g.op("aten::add", 1410, 1490, 6);  // folded into its parent, whose kernels become its own
  g.launch("cudaLaunchKernel", 1420, 1440, 16);

  g.kernel("gemm", 400, 1400, 11, 2, 4, 128);
  g.kernel("gemm", 1400, 2000, 12, 2, 4, 128);
  g.kernel("relu_k", 2000, 2100, 13, 3, 2, 256, /*graph_node=*/42, /*graph=*/5);
  trace::CudaInfo copy;
  copy.correlation_id = 14;
  copy.external_id = 4;
  copy.bytes = 4096;
  copy.device = 0;
  g.cuda(EventKind::Memcpy, "Memcpy HtoD (Pageable -> Device)", 2100, 2400, 1, copy);
  g.kernel("add_k", 2400, 2450, 16, 6, 1, 32);
  g.kernel("orphan", 2500, 2600, 99, 0, 1, 1);   // no op pushed: unmatched, no launch seen
  g.kernel("stray", 2600, 2620, 98, 777, 1, 1);  // an op id no op of the trace has
  trace::CudaInfo api;
  api.correlation_id = 98;  // only CUPTI's record of this launch
  g.cuda(EventKind::CuptiApi, "cudaLaunchKernel", 2500, 2510, 0, api);
  g.cuda(EventKind::GpuOverhead, "Overhead CUPTI buffer flush", 0, 5000, 1, trace::CudaInfo{});

  trace::Event note;
  note.kind = EventKind::Mark;
  note.name = g.str("ptprof: CUDA recorded with CUPTI from /x/libcupti.so");
  g.t.events.push_back(note);
  return g;
}

const report::Row& row(const report::Report& r, const std::string& name) {
  for (const auto& x : r.rows)
    if (x.name == name) return x;
  FAIL("no row " << name);
  throw;
}

bool has_row(const report::Report& r, const std::string& name) {
  for (const auto& x : r.rows)
    if (x.name == name) return true;
  return false;
}

}  // namespace

TEST_CASE("report gpu: CUDA columns with torch's semantics, joined by correlation", "[report][gpu]") {
  const GpuTrace g = sample();
  const report::Report r = report::compute_report({{"t.bin", &g.t}}, {});
  REQUIRE(r.has_cuda_time);
  // Own kernels are self; CUDA total adds the children's.
  CHECK(row(r, "aten::addmm").stats.self_cuda_ns == 1600);
  CHECK(row(r, "aten::addmm").stats.cuda_total_ns == 1600);
  CHECK(row(r, "aten::relu").stats.self_cuda_ns == 100);
  CHECK(row(r, "aten::linear").stats.self_cuda_ns == 0);
  CHECK(row(r, "aten::linear").stats.cuda_total_ns == 1700);
  CHECK(row(r, "aten::copy_").stats.cuda_total_ns == 300);
  // The nested aten::add folds into its parent, taking its kernel along.
  CHECK(row(r, "aten::add").stats.count == 1);
  CHECK(row(r, "aten::add").stats.self_cuda_ns == 50);
  CHECK(row(r, "aten::add").stats.cuda_total_ns == 50);
  CHECK(row(r, "ProfilerStep*").stats.cuda_total_ns == 1700 + 300 + 50);
  CHECK(row(r, "ProfilerStep*").stats.self_cuda_ns == 0);
  // GPU work is a row of its own: CUDA time, no CPU time.
  CHECK(row(r, "gemm").stats.count == 2);
  CHECK(row(r, "gemm").stats.self_cuda_ns == 1600);
  CHECK(row(r, "gemm").stats.cpu_total_ns == 0);
  CHECK(row(r, "Memcpy HtoD (Pageable -> Device)").stats.self_cuda_ns == 300);
  // Self CUDA % is of the GPU events' time; overhead is no part of it.
  CHECK(r.self_cuda_total_ns == 1000 + 600 + 100 + 300 + 50 + 100 + 20);
  CHECK_FALSE(has_row(r, "Overhead CUPTI buffer flush"));
  // Runtime calls are rows (as torch's cudaLaunchKernel) and children of their op,
  // the one only CUPTI recorded included.
  CHECK(row(r, "cudaLaunchKernel").stats.count == 5);
  CHECK(row(r, "cudaLaunchKernel").stats.cpu_total_ns == 100 + 100 + 50 + 20 + 10);
  CHECK(row(r, "aten::addmm").stats.self_cpu_ns == 500 - 200);
  // The agent's note is a line, not a row.
  CHECK_FALSE(has_row(r, "ptprof: CUDA recorded with CUPTI from /x/libcupti.so"));
  REQUIRE(r.gpu.notes.size() == 1);
  CHECK(r.events == g.t.events.size() - 1);  // nor an event of the program
}

TEST_CASE("report gpu: nsys-style sections computed value by value", "[report][gpu]") {
  const GpuTrace g = sample();
  const report::GpuReport gr = report::compute_report({{"t.bin", &g.t}}, {}).gpu;

  REQUIRE(gr.kernels.size() == 5);
  const report::KernelRow& gemm = gr.kernels[0];  // the largest total first
  CHECK(gemm.name == "gemm");
  CHECK(gemm.grid[0] == 4);
  CHECK(gemm.block[0] == 128);
  CHECK(gemm.time_ns.count == 2);
  CHECK(gemm.time_ns.total == 1600);
  CHECK(gemm.time_ns.avg == 800.0);
  CHECK(gemm.time_ns.med == 800.0);
  CHECK(gemm.time_ns.min == 600);
  CHECK(gemm.time_ns.max == 1000);
  CHECK(gemm.time_ns.stddev == Approx(std::sqrt(2.0 * 200 * 200)));
  CHECK(gr.kernel_total_ns == 1000 + 600 + 100 + 50 + 100 + 20);

  REQUIRE(gr.memory_ops.size() == 1);
  CHECK(gr.memory_ops[0].name == "Memcpy HtoD (Pageable -> Device)");
  CHECK(gr.memory_ops[0].time_ns.total == 300);
  CHECK(gr.memory_ops[0].bytes.total == 4096);
  CHECK(gr.memory_ops[0].bytes.count == 1);

  REQUIRE(gr.overheads.size() == 1);
  CHECK(gr.overheads[0].time_ns.total == 5000);

  REQUIRE(gr.graph_nodes.size() == 1);
  CHECK(gr.graph_nodes[0].node_id == 42);
  CHECK(gr.graph_nodes[0].graph_id == 5);
  CHECK(gr.graph_nodes[0].name == "relu_k");
  CHECK(gr.graph_nodes[0].pid == 7);
  CHECK(gr.graph_nodes[0].time_ns.total == 100);

  CHECK(gr.matched == 5);  // gemm x2, relu_k, add_k, the copy
  CHECK(gr.unmatched_kernels == 2);
  CHECK(gr.unmatched_kernel_ns == 120);
  CHECK(gr.unmatched_memory_ops == 0);

  // Busy = the union of [400,2450) and [2500,2620) over the window [0,3000).
  REQUIRE(gr.devices.size() == 1);
  CHECK(gr.devices[0].pid == 7);
  CHECK(gr.devices[0].device == 0);
  CHECK(gr.devices[0].busy_ns == 2050 + 120);
  CHECK(gr.devices[0].span_ns == 3000);
  REQUIRE(gr.steps.size() == 1);
  CHECK(gr.steps[0].step == 3);
  CHECK(gr.steps[0].busy_ns == 1600);
  CHECK(gr.steps[0].step_ns == 2000);

  // Latencies 200, 1050, 1290, 980 (hooked calls) and 100 (CUPTI's record).
  const report::LaunchLatency& l = gr.launch;
  CHECK(l.count == 5);
  CHECK(l.without_launch == 1);
  CHECK(l.min_ns == 100);
  CHECK(l.p50_ns == 980);
  CHECK(l.p90_ns == 1290);
  CHECK(l.p99_ns == 1290);
  CHECK(l.max_ns == 1290);
  CHECK(l.avg_ns == Approx((200 + 1050 + 1290 + 980 + 100) / 5.0));
}

TEST_CASE("report gpu: busy time per stream, each stream's own union, the device's the union of all", "[report][gpu]") {
  GpuTrace g;
  auto on_stream = [&](int64_t s, int64_t e, uint64_t stream) {
    trace::CudaInfo ci;
    ci.device = 0;
    ci.stream = stream;
    g.cuda(EventKind::Kernel, "k", s, e, 1, ci);
  };
  on_stream(0, 100, 7);
  on_stream(50, 150, 7);   // overlaps its own stream: counted once
  on_stream(120, 400, 9);  // overlaps stream 7: both streams count it, the device once
  on_stream(1000, 1010, 9);
  const report::Report r = report::compute_report({{"t.bin", &g.t}}, {});
  const report::GpuReport& gr = r.gpu;
  REQUIRE(gr.streams.size() == 2);
  CHECK(gr.streams[0].stream == 7);
  CHECK(gr.streams[0].busy_ns == 150);
  CHECK(gr.streams[1].stream == 9);
  CHECK(gr.streams[1].busy_ns == 280 + 10);
  CHECK(gr.streams[1].span_ns == 3000);
  REQUIRE(gr.devices.size() == 1);
  CHECK(gr.devices[0].busy_ns == 400 + 10);
  CHECK(report::render_table(r, 0).find("GPU utilisation per stream") != std::string::npos);
  CHECK(report::render_json(r, 0).find(
            "{\"pid\": 7, \"device\": 0, \"stream\": 9, \"busy_ns\": 290, \"span_ns\": 3000}") != std::string::npos);
}

TEST_CASE("report gpu: launch latency from CUPTI's start of a call that keeps the hook's times", "[report][gpu]") {
  GpuTrace g;
  g.op("aten::mm", 0, 2000, 1);
  trace::CudaInfo folded;  // the hook's times 500..600, CUPTI's 300..350 (a replay's plan times)
  folded.correlation_id = 9;
  folded.cupti_start_ns = 300;
  folded.cupti_end_ns = 350;
  g.cuda(EventKind::CudaApi, "cudaLaunchKernel", 500, 600, 0, folded);
  g.launch("cudaLaunchKernel", 700, 710, 10);  // CUPTI's times are its own
  g.kernel("gemm", 1000, 1100, 9, 1, 1, 1);
  g.kernel("gemm", 1200, 1300, 10, 1, 1, 1);
  const report::LaunchLatency& l = report::compute_report({{"t.bin", &g.t}}, {}).gpu.launch;
  CHECK(l.count == 2);
  CHECK(l.max_ns == 1000 - 300);
  CHECK(l.min_ns == 1200 - 700);
}

TEST_CASE("report gpu: rendered in the table and the JSON", "[report][gpu]") {
  const GpuTrace g = sample();
  const report::Report r = report::compute_report({{"t.bin", &g.t}}, {});
  const std::string text = report::render_table(r, 0);
  CHECK(text.find("Self CUDA") != std::string::npos);
  CHECK(text.find("GPU kernel summary") != std::string::npos);
  CHECK(text.find("4x1x1") != std::string::npos);
  CHECK(text.find("CUPTI overhead (not part of any kernel or op time)") != std::string::npos);
  CHECK(text.find("unmatched: 2 kernels (120 ns)") != std::string::npos);
  CHECK(text.find("\nptprof: CUDA recorded with CUPTI from /x/libcupti.so\n") != std::string::npos);
  CHECK(html::render_html(r, nullptr)
            .find("<p class=\"cuda-note\">ptprof: CUDA recorded with CUPTI from "
                  "/x/libcupti.so</p>") != std::string::npos);
  const std::string json = report::render_json(r, 0);
  CHECK(json.find("\"gpu\": {") != std::string::npos);
  CHECK(json.find("\"unmatched_kernels\": 2") != std::string::npos);
  CHECK(json.find("\"p50\": 980") != std::string::npos);
  CHECK(text.find("\nCUDA graph kernels by node\nPID  Graph  Graph node") != std::string::npos);
  CHECK(text.find("  7      5          42") != std::string::npos);
  CHECK(json.find("{\"pid\": 7, \"graph\": 5, \"node\": 42, \"name\": \"relu_k\"") != std::string::npos);
}

TEST_CASE("report gpu: the CSV has every GPU section, value by value", "[report][gpu]") {
  const GpuTrace g = sample();
  const report::Report r = report::compute_report({{"t.bin", &g.t}}, {});
  const std::string csv = report::render_csv(r, 0);
  // Each section: an empty line, its title, a header line, its rows.
  auto section = [&](const std::string& title) {
    const std::string head = "\n\n" + title + "\n";
    const size_t at = csv.find(head);
    if (at == std::string::npos) return std::string("(no section " + title + ")");
    const size_t start = at + head.size();
    const size_t end = csv.find("\n\n", start);
    return csv.substr(start, end == std::string::npos ? std::string::npos : end + 1 - start);
  };
  CHECK(section("CUDA notes") == "Note\nptprof: CUDA recorded with CUPTI from /x/libcupti.so\n");
  // Kernels by total time: gemm 1000+600 of 1870 ns; the rest one instance each.
  CHECK(section("GPU kernel summary") ==
        "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),GridXYZ,BlockXYZ,Name\n"
        "85.6,1600,2,800.0,800.0,600,1000,282.8,4x1x1,128x1x1,gemm\n"
        "5.3,100,1,100.0,100.0,100,100,0.0,1x1x1,1x1x1,orphan\n"
        "5.3,100,1,100.0,100.0,100,100,0.0,2x1x1,256x1x1,relu_k\n"
        "2.7,50,1,50.0,50.0,50,50,0.0,1x1x1,32x1x1,add_k\n"
        "1.1,20,1,20.0,20.0,20,20,0.0,1x1x1,1x1x1,stray\n");
  CHECK(section("GPU memory operations by time") ==
        "Time (%),Total Time (ns),Count,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Operation\n"
        "100.0,300,1,300.0,300.0,300,300,0.0,Memcpy HtoD (Pageable -> Device)\n");
  CHECK(section("GPU memory operations by size") ==
        "Total (B),Count,Avg (B),Med (B),Min (B),Max (B),StdDev (B),Operation\n"
        "4096,1,4096.0,4096.0,4096,4096,0.0,Memcpy HtoD (Pageable -> Device)\n");
  CHECK(section("CUDA graph kernels by node") ==
        "PID,Graph,Graph node,Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Kernel\n"
        "7,5,42,100,1,100.0,100.0,100,100,0.0,relu_k\n");
  CHECK(section("\"GPU utilisation (busy: union of kernels, copies and sets)\"") ==
        "PID,Device,Busy (ns),Window (ns),Busy (%)\n7,0,2170,3000,72.3\n");
  CHECK(section("GPU utilisation per step") == "Step,PID,Device,Busy (ns),Step (ns),Busy (%)\n3,7,0,1600,2000,80.0\n");
  CHECK(section("Kernel launch latency (kernel start - launch call start)") ==
        "Kernels,Avg (ns),Min (ns),P50 (ns),P90 (ns),P99 (ns),Max (ns)\n5,724.0,100,980,1290,1290,1290\n");
  CHECK(section("CUPTI overhead (not part of any kernel or op time)") ==
        "Total Time (ns),Count,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Overhead\n"
        "5000,1,5000.0,5000.0,5000,5000,0.0,Overhead CUPTI buffer flush\n");
  CHECK(section("GPU work joined to ops by correlation") ==
        "Joined,Unmatched kernels,Unmatched kernel time (ns),Unmatched memory operations,Kernels without their "
        "launch call\n5,2,120,0,1\n");
  // The CUDA API summary (hooked calls) is a section too, after the op table.
  CHECK(section("CUDA API summary").rfind("Time (%),Total Time (ns),Num Calls,", 0) == 0);
  // Without CUDA, none of them.
  GpuTrace cpu;
  cpu.op("aten::mm", 0, 100, 1);
  const std::string plain = report::render_csv(report::compute_report({{"t.bin", &cpu.t}}, {}), 0);
  CHECK(plain.find("\n\n") == std::string::npos);
}

TEST_CASE("report gpu: a trace without CUDA has no GPU section", "[report][gpu]") {
  GpuTrace g;
  g.op("aten::mm", 0, 100, 1);
  const report::Report r = report::compute_report({{"t.bin", &g.t}}, {});
  CHECK_FALSE(r.has_cuda_time);
  CHECK_FALSE(r.gpu.any());
  CHECK(report::render_json(r, 0).find("\"gpu\"") == std::string::npos);
}

TEST_CASE("report gpu: distribution of an even count takes the middle pair's mean", "[report][gpu]") {
  const report::Distribution d = report::distribution({4, 1, 3, 2});
  CHECK(d.count == 4);
  CHECK(d.total == 10);
  CHECK(d.med == 2.5);
  CHECK(d.min == 1);
  CHECK(d.max == 4);
  CHECK(d.stddev == Approx(std::sqrt(5.0 / 3.0)));
}
