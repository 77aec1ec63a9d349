// `ptprof export --perfetto` on a hand-built CUDA trace, decoded here with
// a small protobuf reader: the CUDA events carry what the Chrome export of
// the same trace gives them (Kineto's categories, its args as debug
// annotations, the launching op's External id) and the same ac2g flows, from
// the launch's slice to its first GPU work's, with the GPU work on its lane's
// own track; a folded CUDA call stays at its own times, nested in its op.
#include <bit>
#include <catch2/catch.hpp>
#include <cstring>
#include <set>

#include "ptprof/analysis/export.hpp"
#include "ptprof/analysis/trace_file.hpp"
#include "ptprof/cuda_status.hpp"
#include "ptprof/record.hpp"
#include "test_export_fixtures.hpp"

using namespace ptprof;
using namespace ptprof::testing;
using trace::EventKind;

namespace {

trace::CudaInfo call(uint64_t correlation, uint64_t op) {
  trace::CudaInfo c;
  c.correlation_id = correlation;
  c.external_id = op;
  return c;
}

trace::CudaInfo work(uint64_t correlation, uint64_t op) {
  trace::CudaInfo c = call(correlation, op);
  c.device = 0;
  c.stream = 7;
  return c;
}

// --- A protobuf reader for the few Perfetto messages the export writes
// (field numbers: perfetto_fields.hpp, tests/integration/perfetto_subset.proto).

struct Field {
  uint32_t number = 0;
  uint32_t type = 0;
  uint64_t value = 0;      // varint, fixed64
  std::string_view bytes;  // length-delimited
};

uint64_t read_varint(std::string_view& in) {
  uint64_t v = 0;
  for (int shift = 0; !in.empty(); shift += 7) {
    const uint8_t b = uint8_t(in.front());
    in.remove_prefix(1);
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  FAIL("truncated varint");
  return v;
}

std::vector<Field> fields(std::string_view in) {
  std::vector<Field> out;
  while (!in.empty()) {
    Field f;
    const uint64_t tag = read_varint(in);
    f.number = uint32_t(tag >> 3);
    f.type = uint32_t(tag & 7);
    if (f.type == 0) {
      f.value = read_varint(in);
    } else if (f.type == 1) {
      REQUIRE(in.size() >= 8);
      std::memcpy(&f.value, in.data(), 8);
      in.remove_prefix(8);
    } else if (f.type == 2) {
      const uint64_t n = read_varint(in);
      REQUIRE(in.size() >= n);
      f.bytes = in.substr(0, n);
      in.remove_prefix(n);
    } else {
      FAIL("unexpected wire type " << f.type);
    }
    out.push_back(f);
  }
  return out;
}

// A debug annotation's value: the field it came in (4 int, 5 double, 6 string) and the value.
struct Annotation {
  uint32_t field = 0;
  int64_t i = 0;
  double d = 0;
  std::string s;
};

struct Slice {
  std::string name, category;
  int64_t ts = 0;
  std::pair<int64_t, int64_t> thread;  // pid, tid of its track
  std::map<std::string, Annotation> args;
  std::vector<uint64_t> flows, terminating;
};

std::vector<Slice> decode_slices(const std::string& data) {
  std::map<uint64_t, std::string> names, categories, annotation_names;
  std::map<uint64_t, std::pair<int64_t, int64_t>> threads;  // track uuid -> pid, tid
  std::vector<Slice> slices;
  std::vector<uint64_t> tracks;
  for (const Field& packet : fields(data)) {
    REQUIRE(packet.number == 1);
    int64_t ts = 0;
    std::string_view event;
    for (const Field& f : fields(packet.bytes)) {
      if (f.number == 8) ts = int64_t(f.value);
      if (f.number == 11) event = f.bytes;
      if (f.number == 12)  // interned data
        for (const Field& table : fields(f.bytes)) {
          uint64_t iid = 0;
          std::string text;
          for (const Field& e : fields(table.bytes)) {
            if (e.number == 1) iid = e.value;
            if (e.number == 2) text = std::string(e.bytes);
          }
          if (table.number == 1) categories[iid] = text;
          if (table.number == 2) names[iid] = text;
          if (table.number == 3) annotation_names[iid] = text;
        }
      if (f.number == 60) {  // track descriptor
        uint64_t uuid = 0;
        std::pair<int64_t, int64_t> thread{-1, -1};
        for (const Field& d : fields(f.bytes)) {
          if (d.number == 1) uuid = d.value;
          if (d.number == 4)
            for (const Field& th : fields(d.bytes)) {
              if (th.number == 1) thread.first = int64_t(th.value);
              if (th.number == 2) thread.second = int64_t(th.value);
            }
        }
        if (thread.first >= 0) threads[uuid] = thread;
      }
    }
    if (event.empty()) continue;
    Slice s;
    s.ts = ts;
    uint64_t type = 0, track = 0;
    for (const Field& f : fields(event)) {
      if (f.number == 9) type = f.value;
      if (f.number == 11) track = f.value;
      if (f.number == 10) s.name = names.at(f.value);
      if (f.number == 3) s.category = categories.at(f.value);
      if (f.number == 47) s.flows.push_back(f.value);
      if (f.number == 48) s.terminating.push_back(f.value);
      if (f.number != 4) continue;
      std::string name;
      Annotation a;
      for (const Field& d : fields(f.bytes)) {
        if (d.number == 1) name = annotation_names.at(d.value);
        if (d.number == 4) a = {4, int64_t(d.value), 0, ""};
        if (d.number == 5) a = {5, 0, std::bit_cast<double>(d.value), ""};
        if (d.number == 6) a = {6, 0, 0, std::string(d.bytes)};
      }
      REQUIRE(a.field != 0);
      s.args[name] = a;
    }
    if (type != 1 && type != 3) continue;  // slice ends
    s.thread = threads.count(track) ? threads[track] : std::pair<int64_t, int64_t>{-1, -1};
    slices.push_back(std::move(s));
  }
  return slices;
}

// A Chrome arg and a Perfetto annotation hold the same value: numbers as
// int_value or double_value, texts as string_value, a grid [1,1,1] as "[1, 1, 1]".
bool same_value(const Json& chrome, const Annotation& a) {
  if (chrome.kind == Json::Number)
    return (a.field == 4 && double(a.i) == chrome.num) || (a.field == 5 && a.d == chrome.num);
  if (chrome.kind == Json::String) return a.field == 6 && a.s == chrome.str;
  if (chrome.kind != Json::Array || a.field != 6) return false;
  std::string text = "[";
  for (size_t i = 0; i < chrome.arr.size(); ++i) text += (i ? ", " : "") + std::to_string(int64_t(chrome.arr[i].num));
  return text + "]" == a.s;
}

const Slice* slice_named(const std::vector<Slice>& slices, const std::string& name) {
  for (const Slice& s : slices)
    if (s.name == name) return &s;
  return nullptr;
}

// An A100 as the agent describes it (cupti/cuda_devices.cpp): kernels on device 0 get the occupancy args.
constexpr const char* kAgentA100 =
    R"({"id":0,"name":"NVIDIA A100-SXM4-80GB","totalGlobalMem":84990623744,"computeMajor":8,"computeMinor":0,)"
    R"("maxThreadsPerBlock":1024,"maxThreadsPerMultiprocessor":2048,"regsPerBlock":65536,"regsPerMultiprocessor":65536,)"
    R"("warpSize":32,"sharedMemPerBlock":49152,"sharedMemPerMultiprocessor":167936,"numSms":108,)"
    R"("sharedMemPerBlockOptin":166912,"reservedSharedMemPerBlock":1024})";

}  // namespace

TEST_CASE("Perfetto export: CUDA events carry the Chrome export's categories, args and ac2g flows",
          "[export][perfetto][gpu]") {
  TempDir dir;
  CudaTraceWriter tw(dir.file("gpu.bin"));
  tw.mark(std::string(wire::kCudaDevicePrefix) + kAgentA100, 500);
  tw.op("aten::mm", 1000, 9000, 11);
  trace::CudaInfo launch = call(501, 11);
  launch.cupti_start_ns = 900;  // CUPTI's times, outside the op: the Chrome export shows them
  launch.cupti_end_ns = 3100;
  tw.cuda(EventKind::CudaApi, "cudaLaunchKernel", 2000, 3000, launch);
  tw.cuda(EventKind::CudaApi, "cudaMemcpyAsync", 4000, 5000, call(502, 11));
  tw.cuda(EventKind::CudaApi, "cudaStreamSynchronize", 6000, 8000, call(503, 11));
  trace::CudaInfo cupti_call = call(505, 0);
  cupti_call.cbid = 211;
  tw.cuda(EventKind::CuptiApi, "cudaLaunchKernel", 8200, 8400, cupti_call);
  trace::CudaInfo k = work(501, 11);
  k.grid[0] = 864, k.grid[1] = 1, k.grid[2] = 1;
  k.block[0] = 256, k.block[1] = 1, k.block[2] = 1;
  k.context = 1;
  k.registers = 47;
  k.static_shared = 400;
  k.dynamic_shared = 1024;
  k.queued_ns = 3300;
  tw.cuda(EventKind::Kernel, "gemm_kernel", 3500, 4500, k);
  trace::CudaInfo small = work(505, 0);
  small.grid[0] = small.grid[1] = small.grid[2] = 1;
  small.block[0] = 128, small.block[1] = small.block[2] = 1;
  small.registers = 48;
  tw.cuda(EventKind::Kernel, "small_kernel", 8500, 8600, small);  // Kineto's float args: 0.009259259 ...
  trace::CudaInfo copy = work(502, 11);
  copy.bytes = 92928;
  tw.cuda(EventKind::Memcpy, "Memcpy HtoD (Pageable -> Device)", 5000, 17000, copy);
  tw.cuda(EventKind::GpuSync, "Stream Sync", 17000, 18000, work(503, 11));
  tw.cuda(EventKind::Kernel, "orphan_kernel", 18000, 18100, work(599, 0));  // its launch is not in the window
  REQUIRE(tw.w->finish().ok());
  REQUIRE(exporting::export_chrome({dir.file("gpu.bin")}, dir.file("gpu.json"), {}));
  REQUIRE(exporting::export_perfetto({dir.file("gpu.bin")}, dir.file("gpu.pftrace")));
  const Json doc = parse_json_file(dir.file("gpu.json"));
  const std::vector<Slice> slices = decode_slices(slurp(dir.file("gpu.pftrace")));

  // Every CUDA event of the Chrome export, with its category and args ("Ev
  // Idx" is the Chrome file's order of events, not carried).
  const std::set<std::string> cuda_categories = {"cuda_runtime", "kernel", "gpu_memcpy", "cuda_sync"};
  size_t compared = 0;
  std::set<std::string> seen_categories;
  for (const Json& e : doc["traceEvents"].arr) {
    if (e["ph"].str != "X" || !cuda_categories.count(e["cat"].str)) continue;
    INFO(e["name"].str);
    const Slice* s = nullptr;
    for (const Slice& candidate : slices)
      if (candidate.name == e["name"].str && candidate.category == e["cat"].str &&
          candidate.args.count("correlation") &&
          candidate.args.at("correlation").i == int64_t(e["args"]["correlation"].num))
        s = &candidate;
    REQUIRE(s);
    CHECK(s->thread == std::make_pair(int64_t(e["pid"].num), int64_t(e["tid"].num)));
    std::set<std::string> chrome_args;
    for (const auto& [name, value] : e["args"].obj) {
      if (name == "Ev Idx") continue;
      chrome_args.insert(name);
      INFO(name);
      REQUIRE(s->args.count(name));
      CHECK(same_value(value, s->args.at(name)));
    }
    std::set<std::string> perfetto_args;
    for (const auto& [name, value] : s->args) perfetto_args.insert(name);
    CHECK(perfetto_args == chrome_args);
    seen_categories.insert(s->category);
    ++compared;
  }
  CHECK(compared == 9);
  CHECK(seen_categories == cuda_categories);

  // The typed values, as Perfetto shows them.
  const Slice* kernel = slice_named(slices, "gemm_kernel");
  REQUIRE(kernel);
  CHECK(kernel->args.at("grid").s == "[864, 1, 1]");
  CHECK(kernel->args.at("block").s == "[256, 1, 1]");
  CHECK(kernel->args.at("registers per thread").field == 4);
  CHECK(kernel->args.at("registers per thread").i == 47);
  CHECK(kernel->args.at("shared memory").i == 1424);
  CHECK(kernel->args.at("queued").i == 3300);
  CHECK(kernel->args.at("blocks per SM").field == 5);
  const Slice* small_kernel = slice_named(slices, "small_kernel");
  REQUIRE(small_kernel);
  CHECK(small_kernel->args.at("blocks per SM").d == 0.009259259);  // the double Kineto's float text reads as
  CHECK(small_kernel->args.at("warps per SM").d == 0.037037037);
  const Slice* memcpy = slice_named(slices, "Memcpy HtoD (Pageable -> Device)");
  REQUIRE(memcpy);
  CHECK(memcpy->category == "gpu_memcpy");
  CHECK(memcpy->args.at("bytes").i == 92928);
  CHECK(memcpy->args.at("memory bandwidth (GB/s)").d == Approx(7.744));
  const Slice* sync = slice_named(slices, "Stream Sync");
  REQUIRE(sync);
  CHECK(sync->args.at("cuda_sync_kind").s == "Stream Sync");
  // The op names itself as its CUDA events name it.
  const Slice* op = slice_named(slices, "aten::mm");
  REQUIRE(op);
  CHECK(op->category == "cpu_op");
  CHECK(op->args.at("External id").i == kernel->args.at("External id").i);
  // GPU work on its lane's track; the call on its thread's, at its own times
  // (inside its op), not CUPTI's as the Chrome export shows it.
  CHECK(kernel->thread == std::make_pair(int64_t(7), int64_t(7)));
  const Slice* launch_slice = slice_named(slices, "cudaLaunchKernel");
  REQUIRE(launch_slice);
  CHECK(launch_slice->thread == std::make_pair(int64_t(7), int64_t(70)));
  CHECK(launch_slice->ts == 2000);

  // The ac2g flows: the same (launch, work) pairs as the Chrome export's.
  std::map<uint64_t, std::pair<std::string, std::string>> perfetto_flows;
  for (const Slice& s : slices) {
    for (uint64_t id : s.flows) perfetto_flows[id].first = s.name;
    for (uint64_t id : s.terminating) perfetto_flows[id].second = s.name;
  }
  std::multiset<std::pair<std::string, std::string>> perfetto_pairs, chrome_pairs;
  for (const auto& [id, ends] : perfetto_flows) perfetto_pairs.insert(ends);
  std::map<double, std::pair<std::string, std::string>> chrome_flows;
  for (const Json& e : doc["traceEvents"].arr) {
    if (e.obj.count("cat") == 0 || e["cat"].str != "ac2g") continue;
    // The flow's ends are the slices on its thread at its ts: the launch (ph s) or the work (ph f).
    for (const Json& x : doc["traceEvents"].arr)
      if (x["ph"].str == "X" && x["tid"].num == e["tid"].num && x["ts"].num == e["ts"].num &&
          x["cat"].str != "cpu_op") {
        auto& ends = chrome_flows[e["id"].num];
        (e["ph"].str == "s" ? ends.first : ends.second) = x["name"].str;
      }
  }
  for (const auto& [id, ends] : chrome_flows) chrome_pairs.insert(ends);
  CHECK(chrome_pairs.size() == 4);
  CHECK(perfetto_pairs == chrome_pairs);
  CHECK(perfetto_pairs.count({"cudaLaunchKernel", "gemm_kernel"}) == 1);
  CHECK(perfetto_pairs.count({"cudaLaunchKernel", "small_kernel"}) == 1);  // from CUPTI's record of the call
  CHECK(kernel->terminating.size() == 1);
  CHECK(slice_named(slices, "orphan_kernel")->terminating.empty());
}

TEST_CASE("Perfetto export: a launch and its work in different files keep their flow", "[export][perfetto][gpu]") {
  TempDir dir;
  {
    CudaTraceWriter first(dir.file("a.bin"));
    first.op("aten::add", 1000, 3000, 21);
    first.cuda(EventKind::CudaApi, "cudaLaunchKernel", 1500, 2000, call(601, 21));
    REQUIRE(first.w->finish().ok());
  }
  {
    CudaTraceWriter second(dir.file("b.bin"));
    second.cuda(EventKind::Kernel, "add_kernel", 2500, 2600, work(601, 21));
    REQUIRE(second.w->finish().ok());
  }
  REQUIRE(exporting::export_perfetto({dir.file("a.bin"), dir.file("b.bin")}, dir.file("ab.pftrace")));
  const std::vector<Slice> slices = decode_slices(slurp(dir.file("ab.pftrace")));
  const Slice* launch = slice_named(slices, "cudaLaunchKernel");
  const Slice* kernel = slice_named(slices, "add_kernel");
  const Slice* op = slice_named(slices, "aten::add");
  REQUIRE((launch && kernel && op));
  REQUIRE(launch->flows.size() == 1);
  CHECK(kernel->terminating == launch->flows);
  CHECK(kernel->args.at("External id").i == op->args.at("External id").i);
}
