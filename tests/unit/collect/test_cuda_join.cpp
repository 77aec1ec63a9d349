// The collector's CUDA stage (launcher/collect/cuda_join.hpp), on the tables
// of a synthetic region: events go on their stream's lane or their thread,
// are named by the agent's name, and are joined to their op by correlation,
// now or, while the agent flushes CUPTI per window, when their window is
// written.
#include <catch2/catch.hpp>

#include "collect/cuda_join.hpp"
#include "collector_fixtures.hpp"

using ptprof::launcher::CudaJoin;
using ptprof::testing::StageFixture;
using ptprof::trace::EventKind;
namespace decoded = ptprof::launcher::decoded;
namespace trace = ptprof::trace;

namespace {

decoded::Record at(uint64_t ts, uint32_t name) { return decoded::Record{ts, name}; }

decoded::GpuActivity kernel(uint64_t correlation, uint32_t stream) {
  decoded::GpuActivity a;
  a.kind = EventKind::Kernel;
  a.unnamed = "<unnamed kernel>";
  a.end_ts = 250;
  a.info.correlation_id = correlation;
  a.info.device = 0;
  a.info.stream = stream;
  return a;
}

}  // namespace

TEST_CASE("CUDA join: a correlation that arrived first joins the event at once", "[collector][cuda]") {
  StageFixture f;
  CudaJoin join(f.context);
  join.correlate({55, 9});
  const uint32_t gemm = f.region.name("gemm");
  join.gpu_activity(at(150, gemm), kernel(55, 7), 0, 0, f.trace);
  REQUIRE(f.out.events.size() == 1);
  const trace::Event& e = f.out.events[0];
  CHECK(e.kind == EventKind::Kernel);
  CHECK(e.start_ns == 150);
  CHECK(e.end_ns == 250);
  CHECK(f.text(e.name) == "gemm");
  const trace::CudaInfo& info = f.out.cuda.at(e.arg - 1);
  CHECK(info.external_id == 9);
  CHECK(f.out.threads.at(e.thread).name == "GPU 0 stream 7");
  CHECK(f.trace.events() == 1);
}

TEST_CASE(
    "CUDA join: while the agent flushes per window, an event waits for its correlation until the window is "
    "written",
    "[collector][cuda]") {
  StageFixture f;
  f.region.header().gpu_flush.store(1);
  CudaJoin join(f.context);
  join.gpu_activity(at(150, f.region.name("gemm")), kernel(55, 7), 0, 3, f.trace);
  join.gpu_activity(at(160, f.region.name("orphan")), kernel(56, 7), 0, 3, f.trace);
  CHECK(f.out.events.empty());
  join.correlate({55, 9});
  join.release(2, f.trace);  // another window's: nothing of this one
  CHECK(f.out.events.empty());
  join.release(3, f.trace);
  REQUIRE(f.out.events.size() == 2);
  CHECK(f.out.cuda.at(f.out.events[0].arg - 1).external_id == 9);
  CHECK(f.out.cuda.at(f.out.events[1].arg - 1).external_id == 0);  // unmatched, and says so
  join.release(3, f.trace);                                        // released once
  CHECK(f.out.events.size() == 2);
}

TEST_CASE("CUDA join: without the flush protocol an unmatched event is written at once", "[collector][cuda]") {
  StageFixture f;
  CudaJoin join(f.context);
  join.gpu_activity(at(150, f.region.name("gemm")), kernel(55, 7), 0, 0, f.trace);
  REQUIRE(f.out.events.size() == 1);
  CHECK(f.out.cuda.at(f.out.events[0].arg - 1).external_id == 0);
}

TEST_CASE("CUDA join: ops carry their handle as the join key once CUDA is in play", "[collector][cuda]") {
  StageFixture f;
  CudaJoin join(f.context);
  CHECK(join.op_join_key(9) == 0);
  f.region.header().gpu_flush.store(1);
  CHECK(join.op_join_key(9) == 9);
  f.region.header().gpu_flush.store(0);
  join.saw_cuda();
  CHECK(join.op_join_key(9) == 9);
}

TEST_CASE("CUDA join: copies take the agent's name; a lost name gets the kind's", "[collector][cuda]") {
  StageFixture f;
  CudaJoin join(f.context);
  decoded::GpuActivity copy;
  copy.kind = EventKind::Memcpy;
  copy.unnamed = "Memcpy";
  copy.info.device = 1;
  copy.info.stream = 3;
  copy.info.copy_kind = 1;
  join.gpu_activity(at(10, f.region.name("Memcpy HtoD (Pageable -> Device)")), copy, 0, 0, f.trace);
  join.gpu_activity(at(20, 0), copy, 0, 0, f.trace);
  REQUIRE(f.out.events.size() == 2);
  CHECK(f.text(f.out.events[0].name) == "Memcpy HtoD (Pageable -> Device)");
  CHECK(f.text(f.out.events[1].name) == "Memcpy");
  CHECK(f.out.events[0].thread == f.out.events[1].thread);  // one lane per (device, stream)
  CHECK(f.out.threads.at(f.out.events[0].thread).device == 1);
}

TEST_CASE("CUDA join: CUPTI's API records go on the thread that made the call, overhead on the drainer's",
          "[collector][cuda]") {
  StageFixture f;
  CudaJoin join(f.context);
  decoded::GpuActivity api;
  api.kind = EventKind::CuptiApi;
  api.on_lane = false;
  api.tid = 100;  // thread 0's
  join.gpu_activity(at(10, f.region.name("cudaLaunchKernel")), api, 1, 0, f.trace);
  api.tid = 4242;  // a thread the region never had: the drainer's
  join.gpu_activity(at(20, 0), api, 1, 0, f.trace);
  decoded::GpuActivity overhead;
  overhead.kind = EventKind::GpuOverhead;
  overhead.on_lane = false;
  join.gpu_activity(at(30, 0), overhead, 1, 0, f.trace);
  REQUIRE(f.out.events.size() == 3);
  CHECK(f.out.threads.at(f.out.events[0].thread).tid == 100);
  CHECK(f.out.threads.at(f.out.events[1].thread).tid == 101);
  CHECK(f.out.threads.at(f.out.events[2].thread).tid == 101);
}

TEST_CASE("CUDA join: a hooked call goes on its thread, its kernel's name into the file", "[collector][cuda]") {
  StageFixture f;
  CudaJoin join(f.context);
  join.correlate({12, 9});
  decoded::CudaApiCall call;
  call.end_ts = 140;
  call.info.correlation_id = 12;
  call.info.kernel_name = f.region.name("gemm");
  join.api_call(at(130, f.region.name("cudaLaunchKernel")), call, 0, 0, f.trace);
  REQUIRE(f.out.events.size() == 1);
  const trace::Event& e = f.out.events[0];
  CHECK(e.kind == EventKind::CudaApi);
  CHECK(e.end_ns == 140);
  CHECK(f.text(e.name) == "cudaLaunchKernel");
  CHECK(f.out.threads.at(e.thread).tid == 100);
  const trace::CudaInfo& info = f.out.cuda.at(e.arg - 1);
  CHECK(f.text(info.kernel_name) == "gemm");
  CHECK(info.external_id == 9);
}
