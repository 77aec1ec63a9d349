// `ptprof export --chrome` on a hand-built CUDA trace: the args torch.profiler
// gives GPU work and CUDA calls (device, stream, correlation, grid, block,
// bytes, bandwidth, cuda_sync_kind), the launching op's External id on both,
// and one ac2g flow from each launch to its first GPU work, as HTA and the
// viewers read them.
#include <catch2/catch.hpp>

#include "ptprof/analysis/export.hpp"
#include "test_export_fixtures.hpp"

using namespace ptprof;
using namespace ptprof::testing;
using trace::EventKind;

namespace {

// One process (pid 7): thread 0 the CPU, thread 1 the lane of device 0, stream 7.
struct CudaTraceWriter {
  std::unique_ptr<format::TraceWriter> w;
  uint32_t cpu = 0, lane = 0;
  explicit CudaTraceWriter(const std::string& path) {
    trace::Header h;
    h.window_start_ns = 0;
    h.window_end_ns = 100'000;
    w = open_writer(path, h);
    w->add_process({7, 1, "python", 0});
    cpu = w->add_thread({0, 70, "main", 0, 0, -1});
    lane = w->add_thread({0, 7, "GPU 0 stream 7", 0, 0, 0});
  }
  void op(const std::string& name, int64_t s, int64_t e, uint64_t handle) {
    trace::Event ev;
    ev.kind = EventKind::Op;
    ev.name = w->intern(name);
    ev.start_ns = s;
    ev.end_ns = e;
    ev.thread = cpu;
    ev.arg = handle;
    w->add_event(ev);
  }
  void cuda(EventKind kind, const std::string& name, int64_t s, int64_t e, trace::CudaInfo ci) {
    trace::Event ev;
    ev.kind = kind;
    ev.name = w->intern(name);
    ev.start_ns = s;
    ev.end_ns = e;
    ev.thread = kind == EventKind::CudaApi ? cpu : lane;
    ev.arg = w->add_cuda(ci) + 1;
    w->add_event(ev);
  }
};

trace::CudaInfo info(uint64_t correlation, uint64_t op) {
  trace::CudaInfo c;
  c.correlation_id = correlation;
  c.external_id = op;
  return c;
}

trace::CudaInfo on_device(uint64_t correlation, uint64_t op, uint64_t stream) {
  trace::CudaInfo c = info(correlation, op);
  c.device = 0;
  c.stream = stream;
  return c;
}

const Json* find(const Json& doc, const std::string& ph, const std::string& name) {
  for (const Json& e : doc["traceEvents"].arr)
    if (e["ph"].str == ph && (name.empty() || (e.obj.count("name") && e["name"].str == name))) return &e;
  return nullptr;
}

std::vector<const Json*> all(const Json& doc, const std::string& ph, const std::string& cat) {
  std::vector<const Json*> out;
  for (const Json& e : doc["traceEvents"].arr)
    if (e["ph"].str == ph && e.obj.count("cat") && e["cat"].str == cat) out.push_back(&e);
  return out;
}

Json export_of(CudaTraceWriter& tw, const TempDir& dir) {
  REQUIRE(tw.w->finish().ok());
  auto r = exporting::export_chrome({dir.file("gpu.bin")}, dir.file("gpu.json"), {});
  REQUIRE(r);
  Json doc = parse_json_file(dir.file("gpu.json"));
  check_chrome_document(doc);
  return doc;
}

}  // namespace

TEST_CASE("Chrome export: GPU work carries Kineto's args and names its launching op", "[export][chrome][gpu]") {
  TempDir dir;
  CudaTraceWriter tw(dir.file("gpu.bin"));
  tw.op("aten::mm", 1000, 9000, 11);
  tw.cuda(EventKind::CudaApi, "cudaLaunchKernel", 2000, 3000, info(501, 11));
  tw.cuda(EventKind::CudaApi, "cudaMemcpyAsync", 4000, 5000, info(502, 11));
  tw.cuda(EventKind::CudaApi, "cudaStreamSynchronize", 6000, 8000, info(503, 11));
  trace::CudaInfo k = on_device(501, 11, 7);
  k.grid[0] = 864, k.grid[1] = 1, k.grid[2] = 1;
  k.block[0] = 256, k.block[1] = 1, k.block[2] = 1;
  k.context = 1;
  k.registers = 40;
  k.static_shared = 400;
  k.dynamic_shared = 1024;
  tw.cuda(EventKind::Kernel, "gemm_kernel", 3500, 4500, k);
  trace::CudaInfo queued = on_device(504, 11, 7);
  queued.queued_ns = 3300;  // CUPTI timed the queueing
  tw.cuda(EventKind::Kernel, "queued_kernel", 4500, 4600, queued);
  trace::CudaInfo cupti_call = info(501, 0);
  cupti_call.cbid = 211;
  tw.cuda(EventKind::CuptiApi, "cudaLaunchKernel", 2000, 3000, cupti_call);
  trace::CudaInfo copy = on_device(502, 11, 7);
  copy.bytes = 92928;
  tw.cuda(EventKind::Memcpy, "Memcpy HtoD (Pageable -> Device)", 5000, 17000, copy);
  tw.cuda(EventKind::GpuSync, "Stream Sync", 17000, 18000, on_device(503, 11, 7));
  Json doc = export_of(tw, dir);

  const Json* op = find(doc, "X", "aten::mm");
  REQUIRE(op);
  const double op_id = (*op)["args"]["External id"].num;

  const Json* kernel = find(doc, "X", "gemm_kernel");
  REQUIRE(kernel);
  const Json& ka = (*kernel)["args"];
  CHECK((*kernel)["cat"].str == "kernel");
  CHECK(ka["External id"].num == op_id);
  CHECK(ka["device"].num == 0);
  CHECK(ka["stream"].num == 7);
  CHECK(ka["correlation"].num == 501);
  REQUIRE(ka["grid"].arr.size() == 3);
  CHECK(ka["grid"].arr[0].num == 864);
  CHECK(ka["block"].arr[0].num == 256);
  CHECK(ka["context"].num == 1);
  CHECK(ka["registers per thread"].num == 40);
  CHECK(ka["shared memory"].num == 400 + 1024);  // static and dynamic, as Kineto sums them
  CHECK(ka["queued"].num == 0);                  // CUPTI did not time it: 0, as in Kineto's files
  const Json* queued_kernel = find(doc, "X", "queued_kernel");
  REQUIRE(queued_kernel);
  CHECK((*queued_kernel)["args"]["queued"].num == 3300);
  CHECK_FALSE((*queued_kernel)["args"].obj.count("context"));  // not named by CUPTI: left out

  const Json* memcpy = find(doc, "X", "Memcpy HtoD (Pageable -> Device)");
  REQUIRE(memcpy);
  CHECK((*memcpy)["args"]["bytes"].num == 92928);
  CHECK((*memcpy)["args"]["memory bandwidth (GB/s)"].num == Approx(7.744));  // bytes per ns, as Kineto's
  CHECK((*memcpy)["args"]["External id"].num == op_id);

  const Json* sync = find(doc, "X", "Stream Sync");
  REQUIRE(sync);
  CHECK((*sync)["cat"].str == "cuda_sync");
  CHECK((*sync)["args"]["cuda_sync_kind"].str == "Stream Sync");
  CHECK((*sync)["args"]["stream"].num == 7);

  const Json* launch = find(doc, "X", "cudaLaunchKernel");
  REQUIRE(launch);
  CHECK((*launch)["cat"].str == "cuda_runtime");
  CHECK((*launch)["args"]["correlation"].num == 501);
  CHECK((*launch)["args"]["External id"].num == op_id);
  CHECK((*launch)["args"]["Ev Idx"].num != (*kernel)["args"]["Ev Idx"].num);
  CHECK_FALSE((*launch)["args"].obj.count("cbid"));  // the agent's hook does not know CUPTI's ids
  bool cupti_record_has_cbid = false;
  for (const Json* e : all(doc, "X", "cuda_runtime"))
    if ((*e)["args"].obj.count("cbid")) cupti_record_has_cbid = (*e)["args"]["cbid"].num == 211;
  CHECK(cupti_record_has_cbid);
}

TEST_CASE("Chrome export: one ac2g flow from each launch to its first GPU work", "[export][chrome][gpu]") {
  TempDir dir;
  CudaTraceWriter tw(dir.file("gpu.bin"));
  tw.op("aten::add", 1000, 3000, 21);
  tw.cuda(EventKind::CudaApi, "cudaLaunchKernel", 1500, 2000, info(601, 21));
  tw.cuda(EventKind::Kernel, "add_kernel", 2500, 2600, on_device(601, 21, 7));
  // A graph launch runs several kernels of one correlation: one flow end.
  tw.op("aten::replay", 4000, 6000, 22);
  tw.cuda(EventKind::CudaApi, "cudaGraphLaunch", 4500, 5000, info(602, 22));
  tw.cuda(EventKind::Kernel, "graph_kernel_a", 5100, 5200, on_device(602, 22, 7));
  tw.cuda(EventKind::Kernel, "graph_kernel_b", 5200, 5300, on_device(602, 22, 7));
  // A launch whose work is not in the window, and work whose launch is not: no flow.
  tw.cuda(EventKind::CudaApi, "cudaLaunchKernel", 7000, 7100, info(603, 0));
  tw.cuda(EventKind::Kernel, "orphan_kernel", 7200, 7300, on_device(604, 0, 7));
  Json doc = export_of(tw, dir);

  auto starts = all(doc, "s", "ac2g");
  auto ends = all(doc, "f", "ac2g");
  REQUIRE(starts.size() == 2);
  REQUIRE(ends.size() == 2);
  // Kineto's ids: the correlation; the start on the launch's thread at its
  // start, the end bound to the kernel ("bp":"e") at its start.
  CHECK((*starts[0])["id"].num == 601);
  CHECK((*starts[0])["tid"].num == 70);
  CHECK((*ends[0])["id"].num == 601);
  CHECK((*ends[0])["tid"].num == 7);
  CHECK((*ends[0])["bp"].str == "e");
  CHECK((*ends[0])["ts"].num == (*find(doc, "X", "add_kernel"))["ts"].num);
  CHECK((*starts[1])["id"].num == 602);
  CHECK((*ends[1])["ts"].num == (*find(doc, "X", "graph_kernel_a"))["ts"].num);
  // Unmatched work keeps an id of its own.
  const Json* orphan = find(doc, "X", "orphan_kernel");
  REQUIRE(orphan);
  CHECK((*orphan)["args"]["External id"].num == (*orphan)["args"]["Ev Idx"].num + 1);
}
