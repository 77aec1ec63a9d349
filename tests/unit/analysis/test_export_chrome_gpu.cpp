// `ptprof export --chrome` on a hand-built CUDA trace: the args torch.profiler
// gives GPU work and CUDA calls (device, stream, correlation, grid, block,
// bytes, bandwidth, cuda_sync_kind), the launching op's External id on both,
// and one ac2g flow from each launch to its first GPU work, as HTA and the
// viewers read them; the header's deviceProperties from the agent's device
// marks, Kineto's occupancy args on kernels, cuda_driver for driver calls.
#include <catch2/catch.hpp>

#include "ptprof/analysis/export.hpp"
#include "ptprof/analysis/trace_file.hpp"
#include "ptprof/cuda_status.hpp"
#include "ptprof/record.hpp"
#include "test_export_fixtures.hpp"

using namespace ptprof;
using namespace ptprof::testing;
using trace::EventKind;

namespace {

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

namespace {

// An A100 as the agent describes it (cupti/cuda_devices.cpp): Kineto's keys, compact, "id" first.
constexpr const char* kAgentA100 =
    R"({"id":0,"name":"NVIDIA A100-SXM4-80GB","totalGlobalMem":84990623744,"computeMajor":8,"computeMinor":0,)"
    R"("maxThreadsPerBlock":1024,"maxThreadsPerMultiprocessor":2048,"regsPerBlock":65536,"regsPerMultiprocessor":65536,)"
    R"("warpSize":32,"sharedMemPerBlock":49152,"sharedMemPerMultiprocessor":167936,"numSms":108,)"
    R"("sharedMemPerBlockOptin":166912,"reservedSharedMemPerBlock":1024})";

void device_mark(CudaTraceWriter& tw, const std::string& json, int64_t at) {
  trace::Event ev;
  ev.kind = EventKind::Mark;
  ev.name = tw.w->intern(std::string(wire::kCudaDevicePrefix) + json);
  ev.start_ns = ev.end_ns = at;
  ev.thread = tw.cpu;
  tw.w->add_event(ev);
}

trace::CudaInfo kernel_on(int32_t device, uint32_t grid, uint32_t block, uint32_t regs, uint32_t smem) {
  trace::CudaInfo k = on_device(700, 0, 7);
  k.device = device;
  k.grid[0] = grid, k.grid[1] = k.grid[2] = 1;
  k.block[0] = block, k.block[1] = k.block[2] = 1;
  k.registers = regs;
  k.static_shared = smem;
  return k;
}

}  // namespace

TEST_CASE("Chrome export: deviceProperties from the agent's device marks, occupancy args on kernels",
          "[export][chrome][gpu][occupancy]") {
  TempDir dir;
  CudaTraceWriter tw(dir.file("gpu.bin"));
  device_mark(tw, kAgentA100, 500);
  device_mark(tw, kAgentA100, 600);  // marked again (another window, another process): one entry
  // Device 0's kernel as a100_alexnet_cuda_sync recorded it: 8 blocks and 64 warps an SM, 63 %.
  tw.cuda(EventKind::Kernel, "described_kernel", 1000, 2000, kernel_on(0, 864, 256, 47, 0));
  tw.cuda(EventKind::Kernel, "small_kernel", 2000, 3000, kernel_on(0, 1, 128, 48, 0));
  tw.cuda(EventKind::Kernel, "undescribed_kernel", 3000, 4000, kernel_on(1, 864, 256, 47, 0));
  tw.cuda(EventKind::Kernel, "shapeless_kernel", 4000, 5000, kernel_on(0, 0, 0, 0, 0));
  Json doc = export_of(tw, dir);

  REQUIRE(doc["deviceProperties"].arr.size() == 1);
  const Json& dev = doc["deviceProperties"].arr[0];
  CHECK(dev["id"].num == 0);
  CHECK(dev["name"].str == "NVIDIA A100-SXM4-80GB");
  CHECK(dev["numSms"].num == 108);
  CHECK(dev["sharedMemPerMultiprocessor"].num == 167936);
  CHECK(dev["totalGlobalMem"].num == 84990623744.0);
  // The marks are the agent's, not events of the program.
  for (const Json& e : doc["traceEvents"].arr)
    CHECK_FALSE((e.obj.count("name") && e["name"].str.starts_with(std::string(wire::kCudaDevicePrefix))));

  const Json* described = find(doc, "X", "described_kernel");
  REQUIRE(described);
  CHECK((*described)["args"]["blocks per SM"].num == 8);
  CHECK((*described)["args"]["warps per SM"].num == 64);
  CHECK((*described)["args"]["est. achieved occupancy %"].num == 63);
  // Kineto's float text, as the newer traces hold it.
  const std::string text = slurp(dir.file("gpu.json"));
  CHECK(text.find(R"("blocks per SM":0.009259259,"warps per SM":0.037037037,"grid":[1,1,1],"block":[128,1,1],)"
                  R"("est. achieved occupancy %":0)") != std::string::npos);
  for (const char* name : {"undescribed_kernel", "shapeless_kernel"}) {
    const Json* k = find(doc, "X", name);
    REQUIRE(k);
    INFO(name);
    CHECK_FALSE((*k)["args"].obj.count("blocks per SM"));
    CHECK_FALSE((*k)["args"].obj.count("est. achieved occupancy %"));
    CHECK((*k)["args"].obj.count("grid"));
  }

  // The reader keeps the description.
  auto t = format::read_trace(dir.file("gpu.bin"), nullptr);
  REQUIRE(t);
  REQUIRE(t->gpu_devices.size() == 1);
  CHECK(t->gpu_devices[0].id == 0);
  CHECK(t->gpu_devices[0].properties == kAgentA100);
}

TEST_CASE("Chrome export: a device mark that is not JSON is left out of the header", "[export][chrome][gpu]") {
  TempDir dir;
  CudaTraceWriter tw(dir.file("gpu.bin"));
  device_mark(tw, R"({"id":3,"name":"broken)", 500);
  device_mark(tw, R"({"id":4,"name":"quote \" and \u0007","numSms":2})", 600);
  Json doc = export_of(tw, dir);  // a strict parser reads it
  REQUIRE(doc["deviceProperties"].arr.size() == 1);
  CHECK(doc["deviceProperties"].arr[0]["id"].num == 4);
  CHECK(doc["deviceProperties"].arr[0]["name"].str == "quote \" and \x07");
}

TEST_CASE("Chrome export: driver API calls are cuda_driver, as Kineto names them", "[export][chrome][gpu]") {
  TempDir dir;
  CudaTraceWriter tw(dir.file("gpu.bin"));
  tw.op("triton_op", 1000, 9000, 31);
  trace::CudaInfo driver_call = info(801, 31);
  driver_call.family = uint8_t(wire::CudaApiFamily::Driver);
  tw.cuda(EventKind::CudaApi, "cuLaunchKernel", 2000, 3000, driver_call);
  trace::CudaInfo cupti_driver = info(801, 0);
  cupti_driver.family = uint8_t(wire::CudaApiFamily::Driver);
  cupti_driver.cbid = 307;
  tw.cuda(EventKind::CuptiApi, "cuLaunchKernel", 2000, 3000, cupti_driver);
  tw.cuda(EventKind::CudaApi, "cudaLaunchKernel", 4000, 5000, info(802, 31));
  tw.cuda(EventKind::Kernel, "triton_kernel", 3500, 4500, on_device(801, 31, 7));
  Json doc = export_of(tw, dir);

  auto driver = all(doc, "X", "cuda_driver");
  REQUIRE(driver.size() == 2);
  for (const Json* e : driver) {
    CHECK((*e)["name"].str == "cuLaunchKernel");
    CHECK((*e)["args"]["correlation"].num == 801);
  }
  auto runtime = all(doc, "X", "cuda_runtime");
  REQUIRE(runtime.size() == 1);
  CHECK((*runtime[0])["name"].str == "cudaLaunchKernel");
  // The flow still runs from the driver launch to its kernel.
  auto starts = all(doc, "s", "ac2g");
  REQUIRE(starts.size() == 1);
  CHECK((*starts[0])["id"].num == 801);
}
