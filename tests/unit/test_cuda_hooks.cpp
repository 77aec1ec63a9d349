// CUDA interposition on the doubles this machine allows (no GPU, no driver):
// a stand-in runtime and a stand-in driver built from the toolkit's headers,
// and the toolkit's real libcudart with no driver, each run under `ptprof run`
// and read back from the trace files.
#include <catch2/catch.hpp>
#include <map>
#include <sstream>

#include "launcher_fixtures.hpp"
#include "ptprof/record.hpp"

#if PTPROF_TEST_CUDA

using namespace ptprof;
using namespace ptprof::testing;

namespace {

const std::string kStubDriverDir = kPrograms + "/../tests/stub-cuda/driver";

struct Call {
  std::string name;
  int32_t tid = 0;
  trace::CudaInfo info;
  std::string kernel;
};

std::vector<Call> cuda_calls(const std::vector<trace::Trace>& traces) {
  std::vector<Call> out;
  for (const auto& t : traces) {
    for (const auto& e : t.events) {
      if (e.kind != trace::EventKind::CudaApi) continue;
      REQUIRE(e.arg >= 1);
      REQUIRE(e.arg <= t.cuda.size());
      const trace::CudaInfo& c = t.cuda[e.arg - 1];
      CHECK(e.end_ns >= e.start_ns);
      out.push_back({t.strings.at(e.name), t.threads.at(e.thread).tid, c, t.strings.at(c.kernel_name)});
    }
  }
  return out;
}

std::map<std::string, int> count_by_name(const std::vector<Call>& calls) {
  std::map<std::string, int> n;
  for (const auto& c : calls) ++n[c.name];
  return n;
}

std::vector<Call> named(const std::vector<Call>& calls, const std::string& name) {
  std::vector<Call> out;
  for (const auto& c : calls)
    if (c.name == name) out.push_back(c);
  return out;
}

}  // namespace

TEST_CASE("runtime calls from two threads are each recorded once with their arguments and results", "[cuda]") {
  TempDir out;
  auto plain = sh(kPrograms + "/cuda_runtime_threads threads");
  REQUIRE(plain.status == 0);
  auto r = sh(kPtprof + " run -o " + out.path.string() + " -- " + kPrograms + "/cuda_runtime_threads threads");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains(plain.output));  // the program computes the same

  auto calls = cuda_calls(read_all(out.path));
  const std::map<std::string, int> expected = {
      {"cudaMalloc", 2}, {"cudaMemcpy", 2}, {"cudaLaunchKernel", 2},      {"cudaMemcpyAsync", 2},
      {"cudaMemset", 2}, {"cudaFree", 4},   {"cudaStreamSynchronize", 2}, {"cudaDeviceSynchronize", 1},
  };
  CHECK(count_by_name(calls) == expected);

  std::map<int32_t, int> per_thread;
  for (const auto& c : calls) ++per_thread[c.tid];
  CHECK(per_thread.size() == 3);  // two workers and main

  for (const auto& c : named(calls, "cudaLaunchKernel")) {
    CHECK(c.kernel == "add_one");
    CHECK((c.info.stream == 0x100 || c.info.stream == 0x101));
    CHECK(c.info.grid[0] == 2);
    CHECK(c.info.grid[1] == 1);
    CHECK(c.info.block[0] == 32);
    CHECK(c.info.result == 0);
    CHECK(c.info.family == uint8_t(wire::CudaApiFamily::Runtime));
  }
  for (const auto& c : named(calls, "cudaMalloc")) {
    CHECK(c.info.bytes == 256);
    CHECK(c.info.ptr != 0);
  }
  for (const auto& c : named(calls, "cudaMemcpy")) {
    CHECK(c.info.bytes == 256);
    CHECK(c.info.copy_kind == 1);  // cudaMemcpyHostToDevice
  }
  for (const auto& c : named(calls, "cudaMemcpyAsync")) CHECK(c.info.copy_kind == 2);
  int failed_frees = 0;
  for (const auto& c : named(calls, "cudaFree")) {
    if (c.info.ptr == 1) {
      CHECK(c.info.result == 1);  // cudaErrorInvalidValue, as the runtime returned it
      ++failed_frees;
    } else {
      CHECK(c.info.result == 0);
    }
  }
  CHECK(failed_frees == 2);
  // Each worker's allocation is what it freed.
  for (const auto& m : named(calls, "cudaMalloc")) {
    int freed = 0;
    for (const auto& f : named(calls, "cudaFree")) freed += f.info.ptr == m.info.ptr && f.tid == m.tid;
    CHECK(freed == 1);
  }

  auto rep = sh(kPtprof + " report --format json " + out.path.string());
  INFO(rep.output);
  REQUIRE(rep.status == 0);
  CHECK_THAT(rep.output, Catch::Contains("\"cuda_api_summary\""));
  CHECK_THAT(rep.output, Catch::Contains("\"name\": \"cudaFree\", ") && Catch::Contains("\"calls\": 4,"));
  auto table = sh(kPtprof + " report " + out.path.string());
  CHECK_THAT(table.output, Catch::Contains("Total Time (ns)") && Catch::Contains("StdDev (ns)"));
}

TEST_CASE("PTPROF_ACTIVITIES=cpu: CUDA calls pass through unrecorded", "[cuda]") {
  TempDir out;
  auto r = sh("PTPROF_ACTIVITIES=cpu " + kPtprof + " run -o " + out.path.string() + " -- " + kPrograms +
              "/cuda_runtime_threads threads");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("sums 2080 2080"));
  std::vector<trace::Trace> traces;
  if (std::filesystem::exists(out.path) && !std::filesystem::is_empty(out.path)) traces = read_all(out.path);
  CHECK(cuda_calls(traces).empty());
}

namespace {

// `env`: variables for the stand-in driver, prefixed to the command lines.
void check_driver_calls(const std::string& env) {
  TempDir out;
  auto plain = sh(env + kPrograms + "/cuda_driver_calls");
  INFO(plain.output);
  REQUIRE(plain.status == 0);
  CHECK_THAT(plain.output, Catch::Contains("wrapped 0 0 0 0 hits 2"));  // no agent: the driver's own
  auto r = sh(env + kPtprof + " run -o " + out.path.string() + " -- " + kPrograms + "/cuda_driver_calls");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("wrapped 1 1 1 1 hits 2"));

  auto calls = cuda_calls(read_all(out.path));
  // cuMemAlloc three ways; the runtime's cudaMalloc and cudaFree call the
  // driver inside, which records nothing of its own.
  const std::map<std::string, int> expected = {
      {"cuMemAlloc_v2", 3}, {"cuLaunchKernel", 1}, {"cuLaunchKernel_ptsz", 1},
      {"cuMemFree_v2", 3},  {"cudaMalloc", 1},     {"cudaFree", 1},
  };
  CHECK(count_by_name(calls) == expected);
  for (const auto& c : named(calls, "cuLaunchKernel")) {
    CHECK(c.kernel == "stub_kernel");
    CHECK(c.info.stream == 7);
    CHECK(c.info.grid[0] == 4);
    CHECK(c.info.block[0] == 64);
    CHECK(c.info.family == uint8_t(wire::CudaApiFamily::Driver));
  }
  for (const auto& c : named(calls, "cuLaunchKernel_ptsz")) {
    CHECK(c.info.grid[2] == 3);
    CHECK(c.info.block[2] == 6);
  }
  std::vector<uint64_t> sizes;
  for (const auto& c : named(calls, "cuMemAlloc_v2")) sizes.push_back(c.info.bytes);
  std::sort(sizes.begin(), sizes.end());
  CHECK(sizes == std::vector<uint64_t>{128, 256, 512});
}

}  // namespace

TEST_CASE("driver entry points are wrapped by name, through cuGetProcAddress and through dlsym", "[cuda]") {
  check_driver_calls("");
}

TEST_CASE("a driver whose cuGetProcAddress hands out internal entry points still gets wrapped", "[cuda]") {
  check_driver_calls("STUB_CUDA_INTERNAL_POINTERS=1 ");
}

TEST_CASE("a runtime linked into a library: its driver calls are recorded, once each", "[cuda]") {
  TempDir out;
  // The driver is found where a system's would be: on the library path.
  auto r = sh("LD_LIBRARY_PATH=" + kStubDriverDir + " " + kPtprof + " run -o " + out.path.string() + " -- " +
              kPrograms + "/cuda_static_runtime");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("static runtime step 0"));
  auto calls = cuda_calls(read_all(out.path));
  // cudaMalloc/cudaFree bind inside the library: no wrapper sees them. The
  // driver calls they make through cuGetProcAddress's pointers are seen.
  const std::map<std::string, int> expected = {{"cuMemAlloc_v2", 1}, {"cuMemFree_v2", 1}};
  CHECK(count_by_name(calls) == expected);
  for (const auto& c : named(calls, "cuMemAlloc_v2")) CHECK(c.info.bytes == 4096);
}

TEST_CASE("the real libcudart without a driver: every error code recorded and returned unchanged", "[cuda]") {
  TempDir out;
  auto plain = sh(kPrograms + "/cuda_real_runtime");
  REQUIRE(plain.status == 0);
  auto r = sh(kPtprof + " run -o " + out.path.string() + " -- " + kPrograms + "/cuda_real_runtime");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains(plain.output));

  // What the program saw, call by call, in order.
  std::vector<std::pair<std::string, int>> returned;
  std::istringstream lines(plain.output);
  std::string name;
  int code = 0;
  while (lines >> name >> code) returned.emplace_back(name, code);
  REQUIRE(returned.size() == 14);

  auto calls = cuda_calls(read_all(out.path));
  std::map<std::string, int> want;
  for (const auto& [n, c] : returned) {
    ++want[n];
    CHECK(c != 0);  // no driver: nothing succeeds
  }
  CHECK(count_by_name(calls) == want);
  for (const auto& [n, c] : returned) {
    INFO(n);
    bool matched = false;
    for (const auto& call : named(calls, n)) matched |= call.info.result == c;
    CHECK(matched);
  }

  auto rep = sh(kPtprof + " report --format csv " + out.path.string());
  INFO(rep.output);
  REQUIRE(rep.status == 0);
  CHECK_THAT(rep.output, Catch::Contains("Time (%),Total Time (ns),Num Calls"));
  CHECK_THAT(rep.output, Catch::Contains(",2,") && Catch::Contains(",cudaMalloc"));
}

TEST_CASE("PTPROF_STEP=cudaProfilerApi: each Start..Stop is a window, nothing is recorded outside", "[cuda]") {
  TempDir out;
  auto r = sh("PTPROF_STEP=cudaProfilerApi " + kPtprof + " run -o " + out.path.string() + " -- " + kPrograms +
              "/cuda_runtime_threads profiler");
  INFO(r.output);
  REQUIRE(r.status == 0);
  auto traces = read_all(out.path);
  REQUIRE(traces.size() == 2);
  std::vector<uint64_t> bytes;
  for (size_t w = 0; w < traces.size(); ++w) {
    const trace::Trace& t = traces[w];
    CHECK(t.header.window == w);
    auto calls = cuda_calls({t});
    const std::map<std::string, int> expected = {{"cudaMalloc", 1}, {"cudaFree", 1}, {"cudaProfilerStop", 1}};
    CHECK(count_by_name(calls) == expected);
    for (const auto& c : named(calls, "cudaMalloc")) bytes.push_back(c.info.bytes);
    int steps = 0;
    for (const auto& e : t.events) steps += e.kind == trace::EventKind::Step && e.arg == w;
    CHECK(steps == 1);
  }
  std::sort(bytes.begin(), bytes.end());
  CHECK(bytes == std::vector<uint64_t>{1001, 1002});  // iterations 1 and 2 only
}

TEST_CASE("PTPROF_STEP=cudaProfilerApi with a schedule: capture ranges are its steps", "[cuda]") {
  TempDir out;
  // Range 0 waits, range 1 is recorded; iterations outside the ranges never are.
  auto r = sh("PTPROF_STEP=cudaProfilerApi " + kPtprof + " run --schedule wait=1,active=1,repeat=1 -o " +
              out.path.string() + " -- " + kPrograms + "/cuda_runtime_threads profiler");
  INFO(r.output);
  REQUIRE(r.status == 0);
  auto traces = read_all(out.path);
  REQUIRE(traces.size() == 1);
  auto calls = cuda_calls(traces);
  const auto mallocs = named(calls, "cudaMalloc");
  REQUIRE(mallocs.size() == 1);
  CHECK(mallocs[0].info.bytes == 1002);
  int steps = 0;
  for (const auto& e : traces[0].events) steps += e.kind == trace::EventKind::Step && e.arg == 1;
  CHECK(steps == 1);
}

TEST_CASE("NVTX ranges and marks become ptprof ranges and marks", "[cuda]") {
  TempDir out;
  auto r = sh(kPtprof + " run -o " + out.path.string() + " -- " + kPrograms + "/nvtx_ranges");
  INFO(r.output);
  REQUIRE(r.status == 0);
  std::map<std::string, int> ranges, marks;
  for (const auto& t : read_all(out.path)) {
    for (const auto& e : t.events) {
      if (e.kind == trace::EventKind::Range) ++ranges[t.strings.at(e.name)];
      if (e.kind == trace::EventKind::Mark) ++marks[t.strings.at(e.name)];
    }
  }
  const std::map<std::string, int> want_ranges = {
      {"outer", 1}, {"inner", 1}, {"registered range", 1}, {"wide \xc3\xa9", 1}};
  CHECK(ranges == want_ranges);
  CHECK(marks == std::map<std::string, int>{{"checkpoint", 1}});
}

#endif  // PTPROF_TEST_CUDA
