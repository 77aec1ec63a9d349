// The dataset's columnar hand-off (analysis/src/dataset): a hand-built trace
// of one rank (a step holding an op with a child, a kernel the op launched,
// a mark, an op outside the step) written as column files, read back here as
// python/ptprof/dataset/__main__.py maps them: ids unique per export, parents
// and self times as the report's call tree gives them, nulls as each width's minimum,
// strings by id into the file's string table.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ptprof/analysis/dataset.hpp"
#include "test_format_fixtures.hpp"

using namespace ptprof;
using ptprof::testing::TempDir;

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

template <class T>
std::vector<T> column(const std::filesystem::path& dir, const std::string& name) {
  const std::string bytes = slurp(dir / name);
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

std::vector<std::string> strings(const std::filesystem::path& dir) {
  const auto offsets = column<int64_t>(dir, "strings.offsets");
  const std::string data = slurp(dir / "strings.data");
  std::vector<std::string> out;
  for (size_t i = 0; i + 1 < offsets.size(); ++i)
    out.push_back(data.substr(size_t(offsets[i]), size_t(offsets[i + 1] - offsets[i])));
  return out;
}

trace::Event event(trace::EventKind kind, uint32_t name, int64_t start, int64_t end, uint64_t arg = 0) {
  trace::Event e;
  e.kind = kind;
  e.name = name;
  e.start_ns = start;
  e.end_ns = end;
  e.arg = arg;
  return e;
}

}  // namespace

TEST_CASE("a trace's tables go over as raw columns with the report's tree and nulls", "[dataset]") {
  trace::Trace t;
  t.header.realtime_offset_ns = 1'000'000;
  t.strings = {"", "ProfilerStep#7", "aten::linear", "aten::addmm", "gemm", "note", "aten::zero_"};
  trace::Process p;
  p.pid = 42;
  p.rank = 3;
  t.processes.push_back(p);
  t.threads.push_back(trace::Thread{0, 42, "main", 5, 0, -1});
  t.threads.push_back(trace::Thread{0, 7, "stream 7", 1, 0, 0});
  t.events.push_back(event(trace::EventKind::Step, 1, 0, 100, 7));
  t.events.push_back(event(trace::EventKind::Op, 2, 10, 50, 900));  // launches the kernel
  t.events.push_back(event(trace::EventKind::Op, 3, 20, 30));
  t.events.push_back(event(trace::EventKind::Mark, 5, 60, 60));
  t.events.push_back(event(trace::EventKind::Op, 6, 200, 210));  // after the step
  trace::CudaInfo k;
  k.correlation_id = 5;
  k.external_id = 900;
  k.device = 0;
  k.stream = 7;
  t.cuda.push_back(k);
  trace::Event kernel = event(trace::EventKind::Kernel, 4, 35, 45, 1);
  kernel.thread = 1;
  t.events.push_back(kernel);

  TempDir tmp;
  const auto dir = tmp.path() / "h";
  REQUIRE(dataset::write_columns("x.r3.42.0a1b2c3d.w000.bin", 2, t, dir.string()).ok());
  const std::string manifest = slurp(dir / "manifest.json");
  CHECK(manifest.find("\"schema\": 4") != std::string::npos);
  CHECK(manifest.find("{\"name\": \"ops\", \"rows\": 5,") != std::string::npos);  // step, 3 ops, the mark
  CHECK(manifest.find("[\"parent_id\", \"int64\", true]") != std::string::npos);

  const auto names = strings(dir);
  REQUIRE(names.size() > t.strings.size());
  CHECK(names[2] == "aten::linear");  // the trace's own ids
  const auto id = column<int64_t>(dir, "ops.id");
  const auto parent = column<int64_t>(dir, "ops.parent_id");
  const auto name = column<int32_t>(dir, "ops.name");
  const auto key = column<int32_t>(dir, "ops.key");
  const auto self = column<int64_t>(dir, "ops.self_ns");
  const auto step = column<int64_t>(dir, "ops.step");
  const auto start = column<int64_t>(dir, "ops.start_ns");
  const auto cuda = column<int64_t>(dir, "ops.cuda_total_ns");
  const auto rank = column<int32_t>(dir, "ops.rank");
  REQUIRE(id.size() == 5);
  auto row = [&](const std::string& n) {
    for (size_t i = 0; i < name.size(); ++i)
      if (names[size_t(name[i])] == n) return i;
    FAIL("no row " << n);
    return size_t(0);
  };
  const size_t s = row("ProfilerStep#7"), lin = row("aten::linear"), mm = row("aten::addmm"), z = row("aten::zero_");
  CHECK(id[lin] == (int64_t(2) << 32 | 1));  // the export's second file... its ordinal, then the event
  CHECK(names[size_t(key[s])] == "ProfilerStep*");
  CHECK(parent[lin] == id[s]);
  CHECK(parent[mm] == id[lin]);
  CHECK(parent[s] == INT64_MIN);  // null
  CHECK(self[lin] == 30);         // 40 less its child's 10
  CHECK(self[s] == 60);
  CHECK(cuda[lin] == 10);  // its kernel
  CHECK(step[lin] == 7);
  CHECK(step[z] == INT64_MIN);     // outside every step
  CHECK(start[lin] == 1'000'010);  // the wall clock
  CHECK(rank[lin] == 3);
  // The ranks' op time: aten::linear and, after the step, aten::zero_; not
  // aten::addmm inside linear, nor the step or the mark (not ops).
  const auto outermost = column<int8_t>(dir, "ops.outermost_op");
  CHECK(outermost[lin] == 1);
  CHECK(outermost[z] == 1);
  CHECK(outermost[mm] == 0);
  CHECK(outermost[s] == 0);

  // What the report's SQL sums: the step's direct ops (linear, 40 ns; not the
  // mark), and per process, kind and key, the ops rows summed.
  const auto step_ops = column<int64_t>(dir, "steps.operators_ns");
  REQUIRE(step_ops.size() == 1);
  CHECK(step_ops[0] == 40);
  const auto total_key = column<int32_t>(dir, "op_totals.key");
  const auto total_calls = column<int64_t>(dir, "op_totals.calls");
  const auto total_self = column<int64_t>(dir, "op_totals.self_ns");
  const auto total_outer = column<int64_t>(dir, "op_totals.outermost_ns");
  const auto total_pid = column<int32_t>(dir, "op_totals.pid");
  REQUIRE(total_key.size() == 5);  // ProfilerStep*, linear, addmm, the mark, zero_
  for (size_t i = 0; i < total_key.size(); ++i) {
    const std::string& k = names[size_t(total_key[i])];
    CAPTURE(k);
    CHECK(total_calls[i] == 1);
    CHECK(total_pid[i] == 42);
    if (k == "aten::linear") CHECK((total_self[i] == 30 && total_outer[i] == 40));
    if (k == "aten::zero_") CHECK(total_outer[i] == 10);
    if (k == "aten::addmm" || k == "ProfilerStep*") CHECK(total_outer[i] == 0);
  }

  const auto op_id = column<int64_t>(dir, "gpu.op_id");
  const auto gpu_step = column<int64_t>(dir, "gpu.step");
  REQUIRE(op_id.size() == 1);
  CHECK(op_id[0] == id[lin]);
  CHECK(gpu_step[0] == 7);
  const auto device = column<int32_t>(dir, "threads.device");
  REQUIRE(device.size() == 2);
  CHECK(device[0] == INT32_MIN);  // a CPU thread: null
  CHECK(device[1] == 0);

  // The hand-off directory is written once: never over another.
  CHECK_FALSE(dataset::write_columns("x.bin", 3, t, dir.string()).ok());
}

TEST_CASE("work replayed from a CUDA graph has its capturing op and its replay's step", "[dataset][graphs]") {
  trace::Trace t;
  t.strings = {"", "ProfilerStep#7", "ProfilerStep#8", "aten::mm", "cudaGraphLaunch", "gemm"};
  trace::Process p;
  p.pid = 42;
  t.processes.push_back(p);
  t.threads.push_back(trace::Thread{0, 42, "main", 5, 0, -1});
  t.threads.push_back(trace::Thread{0, 7, "stream 7", 1, 0, 0});
  t.events.push_back(event(trace::EventKind::Step, 1, 0, 100, 7));
  t.events.push_back(event(trace::EventKind::Step, 2, 100, 200, 8));
  t.events.push_back(event(trace::EventKind::Op, 3, 10, 50, 900));  // captured the graph in step 7
  trace::CudaInfo launch;
  launch.correlation_id = 6;
  t.cuda.push_back(launch);
  t.events.push_back(event(trace::EventKind::CudaApi, 4, 150, 155, 1));  // replayed it in step 8
  trace::CudaInfo k;
  k.correlation_id = 6;
  k.external_id = 900;
  k.device = 0;
  k.stream = 7;
  k.graph_node_id = 3;
  k.graph_id = 1;
  k.graph_capture = trace::GraphCapture::Recorded;
  k.capture_op = 3;
  t.cuda.push_back(k);
  trace::Event kernel = event(trace::EventKind::Kernel, 5, 160, 170, 2);
  kernel.thread = 1;
  t.events.push_back(kernel);

  TempDir tmp;
  const auto dir = tmp.path() / "g";
  REQUIRE(dataset::write_columns("x.42.0a1b2c3d.w000.bin", 1, t, dir.string()).ok());
  const auto names = strings(dir);
  const auto op_name = column<int32_t>(dir, "ops.name");
  const auto op_id = column<int64_t>(dir, "ops.id");
  const auto gpu_step = column<int64_t>(dir, "gpu.step");
  const auto gpu_op = column<int64_t>(dir, "gpu.op_id");
  REQUIRE(gpu_step.size() == 1);
  CHECK(gpu_step[0] == 8);  // the replay's step, not the capture's
  int64_t mm = 0;
  for (size_t i = 0; i < op_name.size(); ++i)
    if (names[size_t(op_name[i])] == "aten::mm") mm = op_id[i];
  CHECK(gpu_op[0] == mm);  // the op that captured it
}
