// The launcher's CUDA data path (ProcessCollector on synthetic rings): hooked
// calls become CudaApi events, CUPTI activity becomes events on GPU lanes,
// external correlations join kernels to the ops that launched them, and a
// window waits for the agent's word that CUPTI was flushed.
#include <algorithm>
#include <catch2/catch.hpp>

#include "collector_fixtures.hpp"

using ptprof::launcher::CollectorOptions;
using ptprof::launcher::ProcessCollector;
using ptprof::testing::MemorySink;
using ptprof::testing::SyntheticRegion;
using ptprof::trace::EventKind;
using ptprof::wire::BoundaryKind;
using ptprof::wire::RecordType;
namespace wire = ptprof::wire;
namespace trace = ptprof::trace;

namespace {

struct Fixture {
  SyntheticRegion region{2};  // thread 0 (tid 100): the program; thread 1 (tid 101): CUPTI's
  CollectorOptions opts;
  ptprof::clock::Converter conv{ptprof::clock::Kind::Monotonic};
  MemorySink sink;
  std::unique_ptr<ProcessCollector> collector;

  Fixture() {
    opts.output_dir = "out";
    opts.host = "host";
    opts.grace = std::chrono::milliseconds(0);
  }
  ProcessCollector& start() {
    collector = std::make_unique<ProcessCollector>(region.take(), ptprof::launcher::FileStem{"host", 4242, 0}, opts,
                                                   conv, sink);
    return *collector;
  }
  const trace::Trace& window(uint32_t index) {
    const std::string path = "out/host.4242.w00" + std::to_string(index) + ".bin";
    INFO("window file " << path);
    REQUIRE(sink.traces.count(path) == 1);
    return sink.traces.at(path);
  }
  void op(uint64_t handle, const char* name, uint64_t begin, uint64_t end) {
    wire::OpBeginPayload b{};
    b.handle = handle;
    b.seq_nr = -1;
    REQUIRE(wire::emit(region.ring(0), RecordType::OpBegin, region.name(name), begin, b));
    REQUIRE(wire::emit(region.ring(0), RecordType::OpEnd, 0, end, wire::OpEndPayload{handle}));
  }
  void kernel(uint64_t correlation, const char* name, uint64_t start, uint64_t end, uint32_t stream) {
    wire::GpuActivityPayload p{};
    p.end_ts = end;
    p.correlation_id = correlation;
    p.device = 0;
    p.stream = stream;
    p.kind = uint8_t(wire::GpuActivityKind::Kernel);
    p.grid[0] = 8;
    p.block[0] = 256;
    REQUIRE(wire::emit(region.ring(1), RecordType::GpuActivity, region.name(name), start, p));
  }
  void correlate(uint64_t correlation, uint64_t external, uint64_t ts) {
    REQUIRE(wire::emit(region.ring(1), RecordType::ExternalCorrelation, 0, ts,
                       wire::ExternalCorrelationPayload{correlation, external}));
  }
};

std::vector<const trace::Event*> of_kind(const trace::Trace& t, EventKind kind) {
  std::vector<const trace::Event*> out;
  for (const auto& e : t.events)
    if (e.kind == kind) out.push_back(&e);
  return out;
}

}  // namespace

TEST_CASE("collector: a hooked CUDA call becomes a CudaApi event with its arguments", "[collector][cuda]") {
  Fixture f;
  f.region.boundary(BoundaryKind::WindowBegin, 0, 0);
  wire::CudaApiPayload p{};
  p.end_ts = 180;
  p.correlation_id = 0;
  p.stream = 0x100;
  p.bytes = 4096;
  p.ptr = 0xdead0000;
  p.grid[0] = 3;
  p.block[2] = 5;
  p.result = 35;
  p.kernel_name = f.region.name("add_one");
  p.family = uint8_t(wire::CudaApiFamily::Runtime);
  p.copy_kind = 2;
  REQUIRE(wire::emit(f.region.ring(0), RecordType::CudaApi, f.region.name("cudaLaunchKernel"), 120, p));
  f.op(77, "aten::add", 100, 200);
  auto& c = f.start();
  c.drain(1000);
  c.finish();
  const trace::Trace& t = f.window(0);
  auto calls = of_kind(t, EventKind::CudaApi);
  REQUIRE(calls.size() == 1);
  const trace::Event& e = *calls[0];
  CHECK(t.strings.at(e.name) == "cudaLaunchKernel");
  CHECK(e.start_ns == 120);
  CHECK(e.end_ns == 180);
  CHECK(t.threads.at(e.thread).tid == 100);
  REQUIRE(e.arg == 1);
  const trace::CudaInfo& info = t.cuda.at(0);
  CHECK(info.stream == 0x100);
  CHECK(info.bytes == 4096);
  CHECK(info.ptr == 0xdead0000);
  CHECK(info.grid[0] == 3);
  CHECK(info.block[2] == 5);
  CHECK(info.result == 35);
  CHECK(t.strings.at(info.kernel_name) == "add_one");
  CHECK(info.copy_kind == 2);
  // With CUDA in the process, ops carry their handle for the join.
  auto ops = of_kind(t, EventKind::Op);
  REQUIRE(ops.size() == 1);
  CHECK(ops[0]->arg == 77);
}

TEST_CASE("collector: GPU activity lands on per-stream lanes, joined to its op by correlation", "[collector][cuda]") {
  Fixture f;
  f.region.header().gpu_flush.store(1);
  f.region.boundary(BoundaryKind::WindowBegin, 0, 0);
  f.op(9, "aten::mm", 100, 300);
  // The kernel arrives before its correlation (CUPTI's buffers are in any order).
  f.kernel(55, "gemm", 150, 250, 7);
  f.kernel(56, "orphan", 260, 270, 7);  // its launch had no op
  f.correlate(55, 9, 400);
  wire::GpuActivityPayload copy{};
  copy.end_ts = 330;
  copy.correlation_id = 57;
  copy.bytes = 1 << 20;
  copy.device = 1;
  copy.stream = 3;
  copy.kind = uint8_t(wire::GpuActivityKind::Memcpy);
  copy.copy_kind = 1;       // CUPTI_ACTIVITY_MEMCPY_KIND_HTOD
  copy.graph_node_id = 31;  // a copy node of CUDA graph 4
  copy.graph_id = 4;
  // The agent names a copy by its kind and memory kinds, as Kineto does.
  REQUIRE(wire::emit(f.region.ring(1), RecordType::GpuActivity, f.region.name("Memcpy HtoD (Pageable -> Device)"), 310,
                     copy));
  wire::GpuActivityPayload overhead{};
  overhead.end_ts = 20;
  overhead.kind = uint8_t(wire::GpuActivityKind::Overhead);
  REQUIRE(wire::emit(f.region.ring(1), RecordType::GpuActivity, 0, 10, overhead));
  wire::GpuActivityPayload api{};
  api.end_ts = 140;
  api.correlation_id = 55;
  api.kind = uint8_t(wire::GpuActivityKind::RuntimeApi);
  api.thread = 100;
  REQUIRE(wire::emit(f.region.ring(1), RecordType::GpuActivity, f.region.name("cudaLaunchKernel"), 130, api));
  auto& c = f.start();
  c.drain(1000);
  c.finish();
  const trace::Trace& t = f.window(0);

  auto kernels = of_kind(t, EventKind::Kernel);
  REQUIRE(kernels.size() == 2);
  for (const trace::Event* k : kernels) {
    const trace::Thread& lane = t.threads.at(k->thread);
    CHECK(lane.device == 0);
    CHECK(lane.tid == 7);
    CHECK(lane.name == "GPU 0 stream 7");
    const trace::CudaInfo& info = t.cuda.at(k->arg - 1);
    CHECK(info.grid[0] == 8);
    CHECK(info.block[0] == 256);
    if (t.strings.at(k->name) == "gemm") {
      CHECK(info.external_id == 9);
      CHECK(k->start_ns == 150);
      CHECK(k->end_ns == 250);
    } else {
      CHECK(info.external_id == 0);  // unmatched, and says so
    }
  }
  CHECK(kernels[0]->thread == kernels[1]->thread);  // one lane per (device, stream)
  auto ops = of_kind(t, EventKind::Op);
  REQUIRE(ops.size() == 1);
  CHECK(ops[0]->arg == 9);

  auto copies = of_kind(t, EventKind::Memcpy);
  REQUIRE(copies.size() == 1);
  CHECK(t.strings.at(copies[0]->name) == "Memcpy HtoD (Pageable -> Device)");
  CHECK(t.threads.at(copies[0]->thread).name == "GPU 1 stream 3");
  CHECK(t.cuda.at(copies[0]->arg - 1).bytes == 1u << 20);
  CHECK(t.cuda.at(copies[0]->arg - 1).graph_node_id == 31);
  CHECK(t.cuda.at(copies[0]->arg - 1).graph_id == 4);

  auto over = of_kind(t, EventKind::GpuOverhead);
  REQUIRE(over.size() == 1);
  CHECK(t.threads.at(over[0]->thread).tid == 101);  // CUPTI's thread, not a lane
  auto cupti = of_kind(t, EventKind::CuptiApi);
  REQUIRE(cupti.size() == 1);
  CHECK(t.threads.at(cupti[0]->thread).tid == 100);  // the thread that made the call
  CHECK(t.cuda.at(cupti[0]->arg - 1).external_id == 9);
  CHECK(t.losses.late_events == 0);
}

TEST_CASE("collector: an ended window waits for GpuFlushed, so late GPU records land in it", "[collector][cuda]") {
  Fixture f;
  f.opts.grace = std::chrono::hours(1);
  f.region.header().gpu_flush.store(1);
  f.region.boundary(BoundaryKind::WindowBegin, 0, 0);
  f.region.boundary(BoundaryKind::WindowEnd, 200, 0);
  f.op(1, "aten::relu", 50, 60);
  auto& c = f.start();
  c.drain(1000);
  c.finish_ready_windows();
  CHECK(f.sink.written.empty());  // CUPTI has not said its buffers are flushed

  // CUPTI's buffer arrives after the window ended; then the agent's word.
  f.kernel(5, "relu_kernel", 70, 90, 1);
  f.correlate(5, 1, 95);
  f.region.boundary(BoundaryKind::GpuFlushed, 500, 0);
  c.drain(2000);
  c.finish_ready_windows();
  REQUIRE(f.sink.written.size() == 1);
  const trace::Trace& t = f.window(0);
  auto kernels = of_kind(t, EventKind::Kernel);
  REQUIRE(kernels.size() == 1);
  CHECK(t.cuda.at(kernels[0]->arg - 1).external_id == 1);
  CHECK(t.losses.late_events == 0);
  c.finish();
}

TEST_CASE("collector: without the flush protocol a window is written as soon as it can be", "[collector][cuda]") {
  Fixture f;
  f.opts.grace = std::chrono::hours(1);
  f.region.boundary(BoundaryKind::WindowBegin, 0, 0);
  f.region.boundary(BoundaryKind::WindowEnd, 200, 0);
  f.op(1, "aten::relu", 50, 60);
  auto& c = f.start();
  c.drain(1000);
  c.finish_ready_windows();
  CHECK(f.sink.written.size() == 1);
  c.finish();
}
