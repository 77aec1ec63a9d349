// CUDA segments as reserved memory, end to end on the stand-in runtime and
// driver: cuda_segments reserves and releases device memory on devices 0 and
// 1 in sizes the test adds up, one segment before the recorded step.
#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "launcher_fixtures.hpp"
#include "ptprof/analysis/memory.hpp"
#include "ptprof/analysis/report.hpp"

#if PTPROF_TEST_CUDA

using namespace ptprof;
using namespace ptprof::testing;

namespace {

struct Segment {
  int64_t ns;
  int8_t device;
  int64_t bytes;
  int64_t reserved;
  std::string op;
  int64_t alloc_ns;
};

const report::Row& row(const report::Report& r, const std::string& name) {
  auto it = std::find_if(r.rows.begin(), r.rows.end(), [&](const report::Row& x) { return x.name == name; });
  INFO("row " << name);
  REQUIRE(it != r.rows.end());
  return *it;
}

}  // namespace

TEST_CASE("CUDA segments: every runtime and driver allocation is reserved memory of its device", "[cuda][memory]") {
  TempDir out;
  const std::string env = "PTPROF_STEP=manual PTPROF_SCHEDULE=wait=1,active=1 ";
  auto r = sh(env + kPtprof + " run --profile-memory -o " + out.path.string() + " -- " + kPrograms + "/cuda_segments");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("segments done, 0 failures"));

  const std::vector<trace::Trace> traces = read_all(out.path);
  REQUIRE(traces.size() == 1);
  const trace::Trace& t = traces[0];
  std::vector<Segment> segs;
  for (const auto& e : t.events) {
    if (e.kind != trace::EventKind::Memory) continue;
    const trace::MemoryInfo& m = t.memory.at(e.arg - 1);
    CHECK(m.segment);
    CHECK(m.device_type == trace::kDeviceCuda);
    CHECK(m.total_allocated == 0);  // no torch here
    segs.push_back({e.start_ns, m.device_index, m.bytes, m.total_reserved, t.strings.at(m.op), m.alloc_ns});
  }
  std::stable_sort(segs.begin(), segs.end(), [](const Segment& a, const Segment& b) { return a.ns < b.ns; });
  // (device, bytes, reserved on the device after it, range): the 64 KiB
  // segment reserved before the window counts from the start, and its
  // release in the window is matched to it; the refused cudaFree is absent.
  using Want = std::tuple<int, int64_t, int64_t, std::string>;
  const std::vector<Want> want = {
      {0, 1048576, 1114112, "runtime_segments"},
      {1, 4096, 4096, "runtime_segments"},
      {1, 8192, 12288, "runtime_segments"},
      {1, -8192, 4096, "runtime_segments"},
      {1, 3000, 7096, "driver_segments"},
      {0, 2097152, 3211264, "driver_segments"},
      {1, 512, 7608, "driver_segments"},
      {1, -512, 7096, "driver_segments"},
      {0, -2097152, 1114112, "driver_segments"},
      {0, -1048576, 65536, "frees"},
      {1, -4096, 3000, "frees"},
      {1, -3000, 0, "frees"},
      {0, -65536, 0, "frees"},
  };
  std::vector<Want> got;
  got.reserve(segs.size());
  for (const Segment& s : segs) got.emplace_back(s.device, s.bytes, s.reserved, s.op);
  CHECK(got == want);
  REQUIRE(!segs.empty());
  CHECK(segs.back().alloc_ns != 0);
  CHECK(segs.back().alloc_ns < t.header.window_start_ns);

  // ptprof memory: peak reserved per device, the op at it, no allocated line.
  memory::SummaryBuilder sb;
  sb.add("t", t);
  const memory::Summary s = std::move(sb).finish();
  REQUIRE(s.peaks.size() == 2);
  CHECK(s.peaks[0].device_index == 0);
  CHECK(s.peaks[0].reserved == 3211264);
  CHECK(s.peaks[0].reserved_op == "driver_segments");
  CHECK(s.peaks[1].device_index == 1);
  CHECK(s.peaks[1].reserved == 12288);
  CHECK(s.peaks[1].reserved_op == "runtime_segments");
  CHECK(s.live.empty());
  CHECK(s.ops.empty());
  CHECK(s.segment_events == 13);
  auto text = sh(kPtprof + " memory --bytes " + out.path.string());
  INFO(text.output);
  CHECK(text.status == 0);
  CHECK_THAT(text.output, Catch::Contains("CUDA:0   reserved  3211264 at driver_segments"));
  CHECK_THAT(text.output, Catch::Contains("CUDA:1   reserved  12288 at runtime_segments"));
  CHECK_THAT(text.output, !Catch::Contains("CUDA:0   allocated") && !Catch::Contains("CUDA:1   allocated"));
  CHECK_THAT(text.output, Catch::Contains("CUDA segments per op"));
  const std::string csv = memory::render_timeline_csv(s);
  std::vector<std::string> dev1;
  std::istringstream lines(csv);
  for (std::string l; std::getline(lines, l);)
    if (l.find(",CUDA:1,") != std::string::npos) dev1.push_back(l.substr(l.rfind(',') + 1));
  CHECK(dev1 == std::vector<std::string>{"4096", "12288", "4096", "7096", "7608", "7096", "3000", "0"});

  // CUDA Mem: no torch device allocations in the trace, so the segments
  // count, in their ranges and in the calls that made them.
  const report::Report rep = report::compute_report({{"t", &t}}, report::Options{});
  CHECK(rep.has_cuda_memory);
  CHECK(row(rep, "runtime_segments").stats.cuda_memory == 1048576 + 4096);
  CHECK(row(rep, "runtime_segments").stats.self_cuda_memory == 0);  // all in its calls
  CHECK(row(rep, "cudaMalloc").stats.cuda_memory == 1048576 + 4096);
  CHECK(row(rep, "cuMemCreate").stats.cuda_memory == 2097152);
  CHECK(row(rep, "frees").stats.cuda_memory == -(1048576 + 4096 + 3000 + 65536));
  CHECK(row(rep, "frees").stats.cpu_memory == 0);
}

TEST_CASE("CUDA segments: nothing without --profile-memory", "[cuda][memory]") {
  TempDir out;
  auto r = sh("PTPROF_STEP=manual PTPROF_SCHEDULE=wait=1,active=1 " + kPtprof + " run -o " + out.path.string() +
              " -- " + kPrograms + "/cuda_segments");
  INFO(r.output);
  REQUIRE(r.status == 0);
  for (const auto& t : read_all(out.path)) {
    CHECK(t.memory.empty());
    for (const auto& e : t.events) CHECK(e.kind != trace::EventKind::Memory);
  }
}

TEST_CASE("Out of memory: a failed cudaMalloc is named in the run summary and by ptprof memory", "[cuda][memory]") {
  TempDir out;
  // The stand-in driver's malloc of 2^60 bytes must fail, not abort, under ASan too.
  auto r = sh("ASAN_OPTIONS=allocator_may_return_null=1 " + kPtprof + " run --profile-memory -o " + out.path.string() +
              " -- " + kPrograms + "/cuda_oom");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("the huge cudaMalloc returned 2"));
  CHECK_THAT(r.output, Catch::Contains("ptprof: warning: out of memory: cudaMalloc of 1073741824.00 GiB failed in "
                                       "huge_alloc (pid "));

  memory::SummaryBuilder sb;
  for (const auto& t : read_all(out.path)) sb.add("t", t);
  const memory::Summary s = std::move(sb).finish();
  REQUIRE(s.out_of_memory.size() == 1);
  const memory::OutOfMemory& o = s.out_of_memory[0];
  CHECK(o.api == "cudaMalloc");
  CHECK(o.bytes == uint64_t(1) << 60);
  CHECK(o.op == "huge_alloc");
  // The state then: the 1 MiB segment reserved on device 0, not yet freed.
  REQUIRE(o.state.size() == 1);
  CHECK(o.state[0].device_type == trace::kDeviceCuda);
  CHECK(o.state[0].device_index == 0);
  CHECK(o.state[0].reserved == 1048576);

  auto text = sh(kPtprof + " memory --bytes " + out.path.string());
  INFO(text.output);
  CHECK(text.status == 0);
  CHECK_THAT(text.output, Catch::Contains("Out of memory: 1 CUDA allocation(s) failed"));
  CHECK_THAT(text.output, Catch::Contains("cudaMalloc of 1152921504606846976 failed (out of memory) in huge_alloc"));
  CHECK_THAT(text.output, Catch::Contains("memory then: CUDA:0   allocated 0, reserved 1048576"));
}

TEST_CASE("Out of memory: a run whose allocations succeed says nothing of it", "[cuda][memory]") {
  TempDir out;
  auto r = sh("PTPROF_STEP=manual PTPROF_SCHEDULE=wait=1,active=1 " + kPtprof + " run --profile-memory -o " +
              out.path.string() + " -- " + kPrograms + "/cuda_segments");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, !Catch::Contains("out of memory"));
  auto text = sh(kPtprof + " memory " + out.path.string());
  CHECK_THAT(text.output, !Catch::Contains("Out of memory"));
}

#endif  // PTPROF_TEST_CUDA
