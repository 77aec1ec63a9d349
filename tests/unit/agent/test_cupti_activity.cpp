// The agent's CUPTI buffer path (agent/src/cupti/cupti_activity.cpp) fed synthetic
// activity buffers laid out as cupti_activity.h defines them: every record
// converted field by field, GPU timestamps mapped to the session clock,
// other tools' correlations, the agent's own driver calls and unknown kinds
// skipped, a full ring counted.
// Then end to end: buffers -> ring -> trace (a stand-in for the launcher's
// conversion, which lives elsewhere) -> the report's CUDA columns.
#include <cupti_driver_cbid.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cupti/cupti_activity.hpp"
#include "cupti_buffers.hpp"
#include "ptprof/analysis/report.hpp"
#include "ptprof/analysis/report_format.hpp"
#include "ptprof/ring.hpp"

using namespace ptprof;
using agent::cupti::GpuClock;
using test::SyntheticBuffer;

namespace {

struct Ring {
  explicit Ring(uint64_t capacity)
      : capacity(capacity), data(capacity, 0), ctl(std::make_unique<wire::RingControl>()) {}
  uint64_t capacity;
  std::vector<uint8_t> data;
  std::unique_ptr<wire::RingControl> ctl;
  wire::RingWriter writer{ctl.get(), data.data(), capacity};

  struct Rec {
    wire::RecordHeader h;
    wire::GpuActivityPayload gpu{};
    wire::ExternalCorrelationPayload ext{};
  };
  std::vector<Rec> read() {
    std::vector<Rec> out;
    wire::RingReader reader(ctl.get(), data.data(), capacity);
    reader.drain([&](const wire::RecordHeader& h) {
      Rec r{h};
      const auto* p = reinterpret_cast<const uint8_t*>(&h) + sizeof h;
      if (h.type == uint16_t(wire::RecordType::GpuActivity)) std::memcpy(&r.gpu, p, sizeof r.gpu);
      if (h.type == uint16_t(wire::RecordType::ExternalCorrelation)) std::memcpy(&r.ext, p, sizeof r.ext);
      out.push_back(r);
      return true;
    });
    return out;
  }
};

// As the consumer's intern: a name given as CUPTI's is known again by its
// pointer alone (cupti_consumer.cpp), so one pointer must never be handed
// over with two texts.
struct Names {
  std::vector<std::string> v{""};
  std::map<const char*, std::string> by_pointer;
  bool pointer_reused = false;
  uint32_t id_of(const char* s) {
    for (uint32_t i = 1; i < v.size(); ++i)
      if (v[i] == s) return i;
    v.emplace_back(s);
    return uint32_t(v.size() - 1);
  }
  static uint32_t intern(void* ctx, const char* s) {
    auto* names = static_cast<Names*>(ctx);
    auto [it, added] = names->by_pointer.emplace(s, s);
    if (!added && it->second != s) names->pointer_reused = true;
    return names->id_of(s);
  }
  static uint32_t intern_transient(void* ctx, const char* s) { return static_cast<Names*>(ctx)->id_of(s); }
};

CUptiResult callback_name(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == 211)
    *name = "cudaLaunchKernel_v7000";
  else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == 307)
    *name = "cuLaunchKernel";
  else
    return CUPTI_ERROR_INVALID_PARAMETER;
  return CUPTI_SUCCESS;
}

// CUPTI ns 1'000'000 is tick 5'000'000; two ticks per ns.
constexpr GpuClock kClock{1'000'000, 5'000'000, 2.0};
constexpr uint64_t tick(uint64_t ns) { return 5'000'000 + (ns - 1'000'000) * 2; }

CUpti_ActivityKernel10 kernel(const char* name, uint64_t start, uint64_t end, uint32_t corr) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.deviceId = 1;
  k.contextId = 2;
  k.streamId = 7;
  k.gridX = 64;
  k.gridY = 2;
  k.gridZ = 1;
  k.blockX = 256;
  k.blockY = 1;
  k.blockZ = 1;
  k.correlationId = corr;
  k.name = name;
  return k;
}

CUpti_ActivityExternalCorrelation external(CUpti_ExternalCorrelationKind kind, uint32_t corr, uint64_t id) {
  CUpti_ActivityExternalCorrelation e{};
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = kind;
  e.correlationId = corr;
  e.externalId = id;
  return e;
}

CUpti_ActivityAPI api(CUpti_ActivityKind kind, CUpti_CallbackId cbid, uint64_t start, uint64_t end, uint32_t corr) {
  CUpti_ActivityAPI a{};
  a.kind = kind;
  a.cbid = cbid;
  a.start = start;
  a.end = end;
  a.processId = 100;
  a.threadId = 101;
  a.correlationId = corr;
  return a;
}

}  // namespace

TEST_CASE("cupti: every activity kind becomes its ring record, on the session clock", "[cupti]") {
  SyntheticBuffer buf;
  CUpti_ActivityKernel10 k = kernel("void gemm<float>(...)", 1'000'100, 1'000'600, 41);
  k.graphNodeId = 9001;
  k.graphId = 12;
  k.registersPerThread = 40;
  k.staticSharedMemory = 400;
  k.dynamicSharedMemory = 1024;
  k.queued = 1'000'060;
  buf.add(k);
  CUpti_ActivityMemcpy6 mc{};
  mc.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  mc.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  mc.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  mc.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  mc.bytes = 1 << 20;
  mc.start = 1'000'700;
  mc.end = 1'000'900;
  mc.deviceId = 1;
  mc.contextId = 2;
  mc.streamId = 8;
  mc.correlationId = 42;
  buf.add(mc);
  CUpti_ActivityMemset4 ms{};
  ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  ms.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  ms.bytes = 4096;
  ms.start = 1'001'000;
  ms.end = 1'001'010;
  ms.deviceId = 1;
  ms.streamId = 8;
  ms.correlationId = 43;
  buf.add(ms);
  buf.add(api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 1'000'000, 1'000'050, 41));
  buf.add(api(CUPTI_ACTIVITY_KIND_DRIVER, 307, 1'000'010, 1'000'040, 44));
  buf.add(external(agent::cupti::kExternalKind, 41, 0xabcdef));
  buf.add(external(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 41, 77));  // Kineto's: not ours
  CUpti_ActivityOverhead3 ov{};
  ov.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  ov.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  ov.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  ov.objectId.pt.threadId = 555;
  ov.start = 1'002'000;
  ov.end = 1'002'500;
  buf.add(ov);
  CUpti_ActivitySynchronization2 sy{};
  sy.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  sy.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  sy.start = 1'003'000;
  sy.end = 1'003'100;
  sy.correlationId = 45;
  sy.streamId = 8;
  buf.add(sy);

  Ring ring(1 << 16);
  Names names;
  agent::cupti::ActivityOutput out{&ring.writer, Names::intern, &names, 123456, nullptr, 0, Names::intern_transient};
  const agent::cupti::ActivityCounts n =
      agent::cupti::convert_buffer(buf.data(), buf.size(), SyntheticBuffer::next, callback_name, kClock, out);
  CHECK(n.records == 9);
  CHECK(n.written == 8);
  CHECK(n.skipped == 1);
  CHECK(n.dropped == 0);

  const auto recs = ring.read();
  REQUIRE(recs.size() == 8);
  auto name = [&](const Ring::Rec& r) { return names.v.at(r.h.arg); };
  using wire::GpuActivityKind;
  using wire::RecordType;

  const auto& rk = recs[0];
  CHECK(rk.h.type == uint16_t(RecordType::GpuActivity));
  CHECK(rk.h.size == sizeof(wire::RecordHeader) + sizeof(wire::GpuActivityPayload));
  CHECK(name(rk) == "void gemm<float>(...)");
  CHECK(rk.gpu.kind == uint8_t(GpuActivityKind::Kernel));
  CHECK(rk.h.ts == tick(1'000'100));
  CHECK(rk.gpu.end_ts == tick(1'000'600));
  CHECK(rk.gpu.correlation_id == 41);
  CHECK(rk.gpu.device == 1);
  CHECK(rk.gpu.context == 2);
  CHECK(rk.gpu.stream == 7);
  CHECK(rk.gpu.grid[0] == 64);
  CHECK(rk.gpu.grid[1] == 2);
  CHECK(rk.gpu.grid[2] == 1);
  CHECK(rk.gpu.block[0] == 256);
  CHECK(rk.gpu.graph_node_id == 9001);
  CHECK(rk.gpu.graph_id == 12);
  CHECK(rk.gpu.bytes == 0);
  CHECK(rk.gpu.registers == 40);
  CHECK(rk.gpu.static_shared == 400);
  CHECK(rk.gpu.dynamic_shared == 1024);
  CHECK(rk.gpu.queued_ts == tick(1'000'060));

  const auto& rc = recs[1];
  CHECK(name(rc) == "Memcpy HtoD (Pageable -> Device)");  // as Kineto names it
  CHECK(rc.gpu.kind == uint8_t(GpuActivityKind::Memcpy));
  CHECK(rc.gpu.copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
  CHECK(rc.gpu.bytes == (1u << 20));
  CHECK(rc.h.ts == tick(1'000'700));
  CHECK(rc.gpu.end_ts == tick(1'000'900));
  CHECK(rc.gpu.stream == 8);
  CHECK(rc.gpu.correlation_id == 42);

  const auto& rs = recs[2];
  CHECK(name(rs) == "Memset (Device)");
  CHECK(rs.gpu.kind == uint8_t(GpuActivityKind::Memset));
  CHECK(rs.gpu.bytes == 4096);
  CHECK(rs.gpu.correlation_id == 43);
  CHECK(rs.gpu.end_ts - rs.h.ts == 20);  // 10 ns at two ticks per ns

  const auto& rr = recs[3];
  CHECK(name(rr) == "cudaLaunchKernel");  // CUPTI's version suffix dropped
  CHECK(rr.gpu.kind == uint8_t(GpuActivityKind::RuntimeApi));
  CHECK(rr.h.ts == tick(1'000'000));
  CHECK(rr.gpu.correlation_id == 41);
  CHECK(rr.gpu.thread == 101);
  CHECK(rr.gpu.cbid == 211);
  CHECK(rr.gpu.queued_ts == 0);

  const auto& rd = recs[4];
  CHECK(name(rd) == "cuLaunchKernel");
  CHECK(rd.gpu.kind == uint8_t(GpuActivityKind::DriverApi));
  CHECK(rd.gpu.correlation_id == 44);
  CHECK(rd.gpu.cbid == 307);

  const auto& re = recs[5];
  CHECK(re.h.type == uint16_t(RecordType::ExternalCorrelation));
  CHECK(re.h.ts == 123456);
  CHECK(re.ext.correlation_id == 41);
  CHECK(re.ext.external_id == 0xabcdef);

  const auto& ro = recs[6];
  CHECK(name(ro) == "Overhead CUPTI buffer flush");
  CHECK(ro.gpu.kind == uint8_t(GpuActivityKind::Overhead));
  CHECK(ro.gpu.copy_kind == (0x80 | 1));
  CHECK(ro.gpu.thread == 555);
  CHECK(ro.gpu.end_ts - ro.h.ts == 1000);

  const auto& ry = recs[7];
  CHECK(name(ry) == "Stream Sync");
  CHECK(ry.gpu.kind == uint8_t(GpuActivityKind::Sync));
  CHECK(ry.gpu.stream == 8);
  CHECK(ry.gpu.correlation_id == 45);
}

// CUPTI's names of API functions, versioned as cuptiGetCallbackName gives them.
CUptiResult versioned_name(CUpti_CallbackDomain, uint32_t cbid, const char** name) {
  switch (cbid) {
    case 1:
      *name = "cudaLaunchKernel_v7000";
      break;
    case 2:
      *name = "cudaMalloc_v3020";
      break;
    case 3:
      *name = "cudaStreamGetCaptureInfo_v2_v11030";
      break;
    case 4:
      *name = "cudaGetDevice";
      break;
    case 5:
      *name = "cudaFoo_v";
      break;
    default:
      return CUPTI_ERROR_INVALID_PARAMETER;
  }
  return CUPTI_SUCCESS;
}

TEST_CASE("cupti: each API record keeps its own function's name, without a trailing version", "[cupti]") {
  SyntheticBuffer buf;
  for (uint32_t round = 0; round < 2; ++round)
    for (uint32_t cbid = 1; cbid <= 5; ++cbid)
      buf.add(api(CUPTI_ACTIVITY_KIND_RUNTIME, cbid, 1'000'000 + 100 * cbid, 1'000'050 + 100 * cbid, cbid));
  Ring ring(1 << 14);
  Names names;
  agent::cupti::ActivityOutput out{&ring.writer, Names::intern, &names, 0, nullptr, 0, Names::intern_transient};
  const auto n =
      agent::cupti::convert_buffer(buf.data(), buf.size(), SyntheticBuffer::next, versioned_name, kClock, out);
  CHECK(n.written == 10);
  std::vector<std::string> got;
  for (const auto& r : ring.read()) got.push_back(names.v.at(r.h.arg));
  const std::vector<std::string> once{"cudaLaunchKernel", "cudaMalloc", "cudaStreamGetCaptureInfo_v2", "cudaGetDevice",
                                      "cudaFoo_v"};
  std::vector<std::string> want = once;
  want.insert(want.end(), once.begin(), once.end());
  CHECK(got == want);
  // A stripped name is built in a buffer of the conversion's: never handed
  // over as a name to know again by its pointer.
  CHECK_FALSE(names.pointer_reused);
}

// torch.profiler's tables and HTA name copies and sets as Kineto does
// (memcpyName, Memset's name()): the rows only meet when ptprof's agree.
TEST_CASE("cupti: copies and sets are named as Kineto names them, by their memory kinds", "[cupti]") {
  SyntheticBuffer buf;
  auto copy = [&](uint8_t copy_kind, uint8_t src, uint8_t dst, uint32_t correlation) {
    CUpti_ActivityMemcpy6 m{};
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = copy_kind;
    m.srcKind = src;
    m.dstKind = dst;
    m.bytes = 64;
    m.start = 1'000'000 + 100 * correlation;
    m.end = m.start + 10;
    m.correlationId = correlation;
    buf.add(m);
  };
  copy(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 1);
  copy(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 2);
  copy(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC,
       CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC, 3);
  copy(CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN, CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN, 200, 4);  // kinds of a later CUPTI
  copy(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 5);
  auto set = [&](uint16_t memory_kind, uint32_t correlation) {
    CUpti_ActivityMemset4 m{};
    m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    m.memoryKind = memory_kind;
    m.bytes = 64;
    m.start = 1'000'000 + 100 * correlation;
    m.end = m.start + 10;
    m.correlationId = correlation;
    buf.add(m);
  };
  set(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, 6);
  set(CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN, 7);
  Ring ring(1 << 14);
  Names names;
  agent::cupti::ActivityOutput out{&ring.writer, Names::intern, &names, 0, nullptr, 0, Names::intern_transient};
  const auto n = agent::cupti::convert_buffer(buf.data(), buf.size(), SyntheticBuffer::next, nullptr, kClock, out);
  CHECK(n.written == 7);
  std::vector<std::string> got;
  for (const auto& r : ring.read()) got.push_back(names.v.at(r.h.arg));
  const std::vector<std::string> want{"Memcpy DtoH (Device -> Pinned)",
                                      "Memcpy DtoD (Device -> Device)",
                                      "Memcpy HtoD (Managed Static -> Device Static)",
                                      "Memcpy <unknown> (Unknown -> Unrecognized)",
                                      "Memcpy DtoH (Device -> Pinned)",
                                      "Memset (Managed)",
                                      "Memset (Unknown)"};
  CHECK(got == want);
  CHECK(names.v.size() == 1 + 6);  // the same name twice is one name (v[0]: none)
  // Formatted on the conversion's stack: interned by its text.
  CHECK_FALSE(names.pointer_reused);
}

TEST_CASE("cupti: a full ring drops and counts, an empty buffer writes nothing", "[cupti]") {
  SyntheticBuffer buf;
  for (uint32_t i = 0; i < 20; ++i) buf.add(kernel("k", 1'000'000 + i, 1'000'001 + i, i));
  Ring ring(1024);  // room for 10 kernel records of 96 bytes
  Names names;
  agent::cupti::ActivityOutput out{&ring.writer, Names::intern, &names, 0};
  auto n = agent::cupti::convert_buffer(buf.data(), buf.size(), SyntheticBuffer::next, nullptr, kClock, out);
  CHECK(n.records == 20);
  CHECK(n.written + n.dropped == 20);
  CHECK(n.dropped > 0);
  CHECK(ring.ctl->dropped.load() == n.dropped);
  n = agent::cupti::convert_buffer(buf.data(), 0, SyntheticBuffer::next, nullptr, kClock, out);
  CHECK(n.records == 0);
}

TEST_CASE("cupti: records of work still in flight (no end time) are skipped", "[cupti]") {
  SyntheticBuffer buf;
  buf.add(kernel("done", 1'000'000, 1'000'010, 1));
  buf.add(kernel("in flight", 1'000'020, 0, 2));  // what a forced flush hands over
  buf.add(kernel("not started", 0, 0, 3));
  Ring ring(1 << 12);
  Names names;
  agent::cupti::ActivityOutput out{&ring.writer, Names::intern, &names, 0};
  auto n = agent::cupti::convert_buffer(buf.data(), buf.size(), SyntheticBuffer::next, nullptr, kClock, out);
  CHECK(n.records == 3);
  CHECK(n.written == 1);
  CHECK(n.skipped == 2);
  const auto recs = ring.read();
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].gpu.correlation_id == 1);
}

TEST_CASE("cupti: the agent's own questions to the driver are not the program's calls", "[cupti][devices]") {
  // cupti_consumer.cpp asks about the devices (cuda_devices.hpp) while CUPTI
  // records driver calls: those records, within the spans it noted, are
  // skipped; the program's, and anything outside the spans, kept.
  SyntheticBuffer buf;
  buf.add(api(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount, 1'000'010, 1'000'020, 1));
  buf.add(api(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute, 1'000'030, 1'000'040, 2));
  buf.add(api(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1'000'050, 1'000'060, 3));
  buf.add(api(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute, 1'000'200, 1'000'210, 4));
  Ring ring(1 << 12);
  Names names;
  const agent::cupti::AgentCallSpan spans[] = {{1'000'000, 1'000'100}};
  agent::cupti::ActivityOutput out{&ring.writer, Names::intern, &names, 0, spans, 1};
  auto n = agent::cupti::convert_buffer(buf.data(), buf.size(), SyntheticBuffer::next, nullptr, kClock, out);
  CHECK(n.records == 4);
  CHECK(n.skipped == 2);
  std::vector<uint64_t> kept;
  for (const auto& r : ring.read()) kept.push_back(r.gpu.correlation_id);
  CHECK(kept == std::vector<uint64_t>{3, 4});  // the launch, and the program's own question after the span
}

TEST_CASE("cupti: the clock mapping runs backwards of the anchor too", "[cupti]") {
  CHECK(kClock.to_ticks(1'000'000) == 5'000'000);
  CHECK(kClock.to_ticks(999'000) == 5'000'000 - 2000);
  const GpuClock tsc{10, 100, 2.5};
  CHECK(tsc.to_ticks(14) == 110);
}

// Buffers -> ring -> trace -> report. The ring-to-trace step below is the
// test's stand-in for the launcher's conversion: GPU records on a lane per
// (device, stream), external ids joined in by correlation id.
TEST_CASE("cupti: end to end, kernels attributed to the ops that launched them", "[cupti][gpu]") {
  SyntheticBuffer buf;
  buf.add(kernel("gemm", 1'000'100, 1'000'600, 1));  // 500 ns, launched by op 0x10
  buf.add(kernel("gemm", 1'000'600, 1'000'900, 2));  // 300 ns, launched by op 0x11 (a child of 0x10)
  CUpti_ActivityKernel10 graph_kernel = kernel("orphan", 1'001'000, 1'001'050, 3);  // no external id: unmatched
  graph_kernel.graphId = 3;                                                         // run from a CUDA graph
  graph_kernel.graphNodeId = 55;
  buf.add(graph_kernel);
  CUpti_ActivityOverhead3 ov{};
  ov.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  ov.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION;
  ov.start = 1'000'100;
  ov.end = 1'000'900;
  buf.add(ov);
  buf.add(external(agent::cupti::kExternalKind, 1, 0x10));
  buf.add(external(agent::cupti::kExternalKind, 2, 0x11));
  Ring ring(1 << 16);
  Names names;
  // The session clock is nanoseconds here (ticks_per_ns 1, offset 4000).
  const GpuClock clock{1'000'000, 1'004'000, 1.0};
  agent::cupti::ActivityOutput out{&ring.writer, Names::intern, &names, 0};
  REQUIRE(agent::cupti::convert_buffer(buf.data(), buf.size(), SyntheticBuffer::next, nullptr, clock, out).written ==
          6);

  trace::Trace t;
  t.strings = names.v;
  t.processes.push_back({9, 1, "python", 0});
  t.threads.push_back({0, 90, "main", 0, 0, -1});
  t.threads.push_back({0, 7, "stream 7", 0, 0, 1});
  auto op = [&](const char* name, int64_t s, int64_t e, uint64_t handle) {
    trace::Event ev;
    ev.kind = trace::EventKind::Op;
    ev.name = Names::intern(&names, name);
    ev.start_ns = s;
    ev.end_ns = e;
    ev.arg = handle;
    t.events.push_back(ev);
  };
  op("aten::linear", 1'004'000, 1'004'090, 0x10);
  op("aten::t", 1'004'010, 1'004'020, 0x11);
  const std::vector<Ring::Rec> recs = ring.read();
  std::map<uint64_t, uint64_t> external_of;
  for (const auto& r : recs)
    if (r.h.type == uint16_t(wire::RecordType::ExternalCorrelation))
      external_of[r.ext.correlation_id] = r.ext.external_id;
  for (const auto& r : recs) {
    if (r.h.type != uint16_t(wire::RecordType::GpuActivity)) continue;
    trace::CudaInfo ci;
    ci.correlation_id = r.gpu.correlation_id;
    ci.external_id = external_of.count(r.gpu.correlation_id) ? external_of[r.gpu.correlation_id] : 0;
    ci.device = int32_t(r.gpu.device);
    ci.graph_node_id = r.gpu.graph_node_id;
    ci.graph_id = r.gpu.graph_id;
    std::copy(std::begin(r.gpu.grid), std::end(r.gpu.grid), ci.grid);
    std::copy(std::begin(r.gpu.block), std::end(r.gpu.block), ci.block);
    t.cuda.push_back(ci);
    trace::Event ev;
    ev.kind =
        r.gpu.kind == uint8_t(wire::GpuActivityKind::Kernel) ? trace::EventKind::Kernel : trace::EventKind::GpuOverhead;
    ev.name = r.h.arg;
    ev.start_ns = int64_t(r.h.ts);
    ev.end_ns = int64_t(r.gpu.end_ts);
    ev.thread = 1;
    ev.arg = t.cuda.size();
    t.events.push_back(ev);
  }
  t.strings = names.v;

  const report::Report rep = report::compute_report({{"t.bin", &t}}, {});
  auto row = [&](const std::string& n) -> const report::Row& {
    for (const auto& x : rep.rows)
      if (x.name == n) return x;
    FAIL("no row " << n);
    throw;
  };
  CHECK(row("aten::linear").stats.self_cuda_ns == 500);
  CHECK(row("aten::linear").stats.cuda_total_ns == 800);
  CHECK(row("aten::t").stats.self_cuda_ns == 300);
  CHECK(row("gemm").stats.count == 2);
  CHECK(rep.self_cuda_total_ns == 850);  // the overhead's 800 ns are in no one's time
  CHECK(rep.gpu.unmatched_kernels == 1);
  CHECK(rep.gpu.unmatched_kernel_ns == 50);
  REQUIRE(rep.gpu.overheads.size() == 1);
  CHECK(rep.gpu.overheads[0].time_ns.total == 800);
  REQUIRE(rep.gpu.kernels.size() == 2);
  CHECK(rep.gpu.kernels[0].name == "gemm");
  CHECK(rep.gpu.kernels[0].time_ns.total == 800);
  REQUIRE(rep.gpu.graph_nodes.size() == 1);
  CHECK(rep.gpu.graph_nodes[0].graph_id == 3);
  CHECK(rep.gpu.graph_nodes[0].node_id == 55);

  // The CSV's GPU blocks (docs/report.md, CSV), value by value.
  const std::string csv = report::render_csv(rep, 0);
  CHECK_THAT(
      csv, Catch::Contains("\n\nGPU kernel summary\n"
                           "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),GridXYZ,"
                           "BlockXYZ,Name\n"
                           "94.1,800,2,400.0,400.0,300,500,141.4,64x2x1,256x1x1,gemm\n"
                           "5.9,50,1,50.0,50.0,50,50,0.0,64x2x1,256x1x1,orphan\n\n"));
  CHECK_THAT(csv, Catch::Contains("\n\nCUDA graph kernels by node\n"
                                  "PID,Graph,Graph node,Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),"
                                  "StdDev (ns),Kernel\n"
                                  "9,3,55,50,1,50.0,50.0,50,50,0.0,orphan\n\n"));
  CHECK_THAT(csv, Catch::Contains("\n\nCUPTI overhead (not part of any kernel or op time)\n"
                                  "Total Time (ns),Count,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Overhead\n"
                                  "800,1,800.0,800.0,800,800,0.0,"));
  // No launch call is in this trace: every kernel is without its launch.
  CHECK_THAT(csv, Catch::EndsWith("\n\nGPU work joined to ops by correlation\n"
                                  "Joined,Unmatched kernels,Unmatched kernel time (ns),Unmatched memory operations,"
                                  "Kernels without their launch call\n2,1,50,0,3\n"));
}
