// The collector's first stage (launcher/collect/record_decoder.hpp): ring
// records, written through the agent's wire::emit into a synthetic ring,
// become typed events carrying their payloads; records too short for their
// payload are Malformed, types of later versions Skipped.
#include <catch2/catch.hpp>

#include <array>
#include <variant>

#include "collector_fixtures.hpp"
#include "ptprof/shapes.hpp"

using ptprof::testing::SyntheticRing;
using ptprof::trace::EventKind;
using ptprof::wire::RecordType;
namespace decoded = ptprof::launcher::decoded;
namespace shapes = ptprof::shapes;
namespace trace = ptprof::trace;
namespace wire = ptprof::wire;

namespace {

// The one record written, decoded; the test fails unless it is an `Event`.
template <class Event>
Event only(SyntheticRing& ring, decoded::Record* record = nullptr) {
  auto all = ring.decode_all();
  REQUIRE(all.size() == 1);
  if (record) *record = all[0].record;
  REQUIRE(std::holds_alternative<Event>(all[0].event));
  return std::get<Event>(all[0].event);
}

}  // namespace

TEST_CASE("decoder: spans, marks and steps keep their time and name; a step's arg is its number",
          "[collector][decode]") {
  SyntheticRing ring;
  REQUIRE(wire::emit(ring.writer(), RecordType::RangePush, 7, 10));
  REQUIRE(wire::emit(ring.writer(), RecordType::RangePop, 0, 20));
  REQUIRE(wire::emit(ring.writer(), RecordType::Mark, 8, 30));
  REQUIRE(wire::emit(ring.writer(), RecordType::Step, 42, 40));
  const auto all = ring.decode_all();
  REQUIRE(all.size() == 4);
  CHECK(std::holds_alternative<decoded::RangePush>(all[0].event));
  CHECK(all[0].record.ts == 10);
  CHECK(all[0].record.name == 7);
  CHECK(std::holds_alternative<decoded::RangePop>(all[1].event));
  CHECK(std::holds_alternative<decoded::Mark>(all[2].event));
  CHECK(all[2].record.name == 8);
  REQUIRE(std::holds_alternative<decoded::Step>(all[3].event));
  CHECK(std::get<decoded::Step>(all[3].event).number == 42);
  CHECK(all[3].record.name == 0);  // not a name: nothing for the arena to look up
}

TEST_CASE("decoder: an OpBegin carries its payload, its flags as the trace's and its shapes", "[collector][decode]") {
  SyntheticRing ring;
  std::array<uint8_t, 64> buf{};
  shapes::Encoder enc(buf.data(), buf.size());
  const int64_t dims[] = {4, 3};
  enc.tensor(6, dims);
  wire::OpBeginPayload p{};
  p.handle = 99;
  p.seq_nr = 5;
  p.fwd_thread_id = 3;
  p.scope = uint8_t(wire::OpScope::BackwardFunction);
  p.flags = wire::kOpAsync | wire::kOpCallerStacks | wire::kOpHasShapes;
  p.shapes_bytes = uint16_t(enc.size());
  p.stack = 2;
  REQUIRE(wire::emit(ring.writer(), RecordType::OpBegin, 11, 100, p, std::span<const uint8_t>(buf.data(), enc.size())));
  REQUIRE(wire::emit(ring.writer(), RecordType::OpEnd, 0, 200, wire::OpEndPayload{99}));
  const auto all = ring.decode_all();
  REQUIRE(all.size() == 2);
  REQUIRE(std::holds_alternative<decoded::OpBegin>(all[0].event));
  const auto& op = std::get<decoded::OpBegin>(all[0].event);
  CHECK(all[0].record.name == 11);
  CHECK(op.handle == 99);
  CHECK(op.seq_nr == 5);
  CHECK(op.fwd_thread_id == 3);
  CHECK(op.scope == uint8_t(wire::OpScope::BackwardFunction));
  CHECK(op.flags == (trace::kAsync | trace::kCallerStacks));
  CHECK(op.stack == 2);
  REQUIRE(op.has_shapes);
  CHECK(*shapes::shapes_text(op.shapes) == "[[4, 3]]");
  REQUIRE(std::holds_alternative<decoded::OpEnd>(all[1].event));
  CHECK(std::get<decoded::OpEnd>(all[1].event).handle == 99);
}

TEST_CASE("decoder: shapes that would run past the record are not read", "[collector][decode]") {
  SyntheticRing ring;
  wire::OpBeginPayload p{};
  p.flags = wire::kOpHasShapes;
  p.shapes_bytes = 200;  // the record holds none
  REQUIRE(wire::emit(ring.writer(), RecordType::OpBegin, 1, 100, p));
  CHECK_FALSE(only<decoded::OpBegin>(ring).has_shapes);
}

TEST_CASE("decoder: a hooked CUDA call's arguments, its end never before its start", "[collector][decode]") {
  SyntheticRing ring;
  wire::CudaApiPayload p{};
  p.end_ts = 50;  // before the call: a clock the target scribbled on
  p.correlation_id = 12;
  p.stream = 3;
  p.ptr = 0x1000;
  p.bytes = 64;
  p.grid[0] = 8;
  p.block[2] = 4;
  p.result = 2;
  p.kernel_name = 9;
  p.family = uint8_t(wire::CudaApiFamily::Driver);
  p.copy_kind = 1;
  REQUIRE(wire::emit(ring.writer(), RecordType::CudaApi, 5, 100, p));
  decoded::Record r;
  const auto call = only<decoded::CudaApiCall>(ring, &r);
  CHECK(r.name == 5);
  CHECK(call.end_ts == 100);
  CHECK(call.info.correlation_id == 12);
  CHECK(call.info.stream == 3);
  CHECK(call.info.ptr == 0x1000);
  CHECK(call.info.bytes == 64);
  CHECK(call.info.grid[0] == 8);
  CHECK(call.info.block[2] == 4);
  CHECK(call.info.result == 2);
  CHECK(call.info.kernel_name == 9);
  CHECK(call.info.family == uint8_t(wire::CudaApiFamily::Driver));
  CHECK(call.info.copy_kind == 1);
}

TEST_CASE("decoder: each kind of GPU activity becomes its event kind, on a lane or a thread", "[collector][decode]") {
  struct Case {
    wire::GpuActivityKind kind;
    EventKind event;
    const char* unnamed;
    bool on_lane;
  };
  const Case cases[] = {
      {wire::GpuActivityKind::Kernel, EventKind::Kernel, "<unnamed kernel>", true},
      {wire::GpuActivityKind::Memcpy, EventKind::Memcpy, "Memcpy", true},
      {wire::GpuActivityKind::Memset, EventKind::Memset, "Memset", true},
      {wire::GpuActivityKind::Sync, EventKind::GpuSync, "Synchronize", true},
      {wire::GpuActivityKind::Overhead, EventKind::GpuOverhead, "CUPTI overhead", false},
      {wire::GpuActivityKind::RuntimeApi, EventKind::CuptiApi, "<unnamed CUDA call>", false},
      {wire::GpuActivityKind::DriverApi, EventKind::CuptiApi, "<unnamed CUDA call>", false},
  };
  for (const Case& c : cases) {
    INFO("GPU activity kind " << int(c.kind));
    SyntheticRing ring;
    wire::GpuActivityPayload p{};
    p.kind = uint8_t(c.kind);
    p.end_ts = 300;
    p.correlation_id = 77;
    p.device = 1;
    p.stream = 7;
    p.bytes = 4096;
    p.copy_kind = 2;
    p.graph_id = 4;
    p.graph_node_id = 31;
    p.thread = 123;
    REQUIRE(wire::emit(ring.writer(), RecordType::GpuActivity, 9, 200, p));
    decoded::Record r;
    const auto a = only<decoded::GpuActivity>(ring, &r);
    CHECK(r.name == 9);  // the agent's name: the kernel's, or "Memcpy DtoH (Device -> Pinned)" for a copy
    CHECK(a.kind == c.event);
    CHECK(std::string(a.unnamed) == c.unnamed);
    CHECK(a.on_lane == c.on_lane);
    CHECK(a.end_ts == 300);
    CHECK(a.info.correlation_id == 77);
    CHECK(a.info.device == 1);
    CHECK(a.info.stream == 7);
    CHECK(a.info.bytes == 4096);
    CHECK(a.info.copy_kind == 2);
    CHECK(a.info.graph_id == 4);
    CHECK(a.info.graph_node_id == 31);
    const bool api = c.event == EventKind::CuptiApi;
    CHECK(a.tid == (api ? 123 : 0));
    CHECK(a.info.kernel_name == (c.event == EventKind::Kernel ? 9u : 0u));
    if (api)
      CHECK(a.info.family == uint8_t(c.kind == wire::GpuActivityKind::RuntimeApi ? wire::CudaApiFamily::Runtime
                                                                                 : wire::CudaApiFamily::Driver));
  }
}

TEST_CASE("decoder: correlations, memory events and stacks", "[collector][decode]") {
  SyntheticRing ring;
  REQUIRE(wire::emit(ring.writer(), RecordType::ExternalCorrelation, 0, 10, wire::ExternalCorrelationPayload{55, 9}));
  wire::MemoryEventPayload m{};
  m.ptr = 0xa000;
  m.bytes = -4096;
  m.total_allocated = 100;
  m.total_reserved = 200;
  m.device_type = trace::kDeviceCuda;
  m.device_index = 1;
  m.source = uint8_t(wire::MemorySource::CudaSegment);
  REQUIRE(wire::emit(ring.writer(), RecordType::MemoryEvent, 0, 20, m));
  struct {
    wire::StackDefPayload head{1, 1, 0};
    wire::PythonFrameRecord py{3, 4, 17, 0};
    wire::NativeFrameRecord native{5, 0, 0x1234};
  } stack;
  REQUIRE(wire::emit(ring.writer(), RecordType::StackDef, 2, 30, stack));
  const auto all = ring.decode_all();
  REQUIRE(all.size() == 3);
  REQUIRE(std::holds_alternative<decoded::Correlation>(all[0].event));
  CHECK(std::get<decoded::Correlation>(all[0].event).correlation_id == 55);
  CHECK(std::get<decoded::Correlation>(all[0].event).external_id == 9);
  REQUIRE(std::holds_alternative<decoded::Memory>(all[1].event));
  const auto& mem = std::get<decoded::Memory>(all[1].event);
  CHECK(mem.source == wire::MemorySource::CudaSegment);
  CHECK(mem.info.segment);
  CHECK(mem.info.ptr == 0xa000);
  CHECK(mem.info.bytes == -4096);
  CHECK(mem.info.total_allocated == 100);
  CHECK(mem.info.total_reserved == 200);
  CHECK(mem.info.device_type == trace::kDeviceCuda);
  CHECK(mem.info.device_index == 1);
  REQUIRE(std::holds_alternative<decoded::StackDef>(all[2].event));
  const auto& s = std::get<decoded::StackDef>(all[2].event);
  CHECK(s.id == 2);
  REQUIRE(s.frames.size() == 2);
  CHECK(s.frames[0] == trace::Frame{trace::FrameKind::Python, 3, 4, 17, 0});
  CHECK(s.frames[1] == trace::Frame{trace::FrameKind::Native, 5, 0, 0, 0x1234});
}

TEST_CASE("decoder: a CUDA graph node's capture keeps its node, original, op and graph", "[collector][decode]") {
  SyntheticRing ring;
  wire::GraphNodePayload p{};
  p.node_id = 0xFFFF'FFFF'FFFF'0001ull;
  p.original_id = 101;
  p.op = 9;
  p.graph_id = 7;
  decoded::Record r;
  REQUIRE(wire::emit(ring.writer(), RecordType::GraphNode, 0, 40, p));
  const auto g = only<decoded::GraphNode>(ring, &r);
  CHECK(r.ts == 40);
  CHECK(g.node_id == 0xFFFF'FFFF'FFFF'0001ull);
  CHECK(g.original_id == 101);
  CHECK(g.op == 9);
  CHECK(g.graph_id == 7);
  // One too short for its payload is malformed.
  SyntheticRing shorter;
  shorter.raw(RecordType::GraphNode, 24, 0, 50);
  CHECK(std::holds_alternative<decoded::Malformed>(shorter.decode_all().at(0).event));
}

TEST_CASE("decoder: a record too short for its payload is malformed; unknown types and kinds are skipped",
          "[collector][decode]") {
  SyntheticRing ring;
  ring.raw(RecordType::CudaApi, 24, 5, 10);  // header + 8 bytes of an 80-byte payload
  ring.raw(RecordType::OpBegin, 16, 5, 20);
  ring.raw(RecordType(200), 16, 5, 30);  // a type of a later version
  wire::GpuActivityPayload later{};
  later.kind = 99;  // a kind of a later version
  REQUIRE(wire::emit(ring.writer(), RecordType::GpuActivity, 0, 40, later));
  wire::StackDefPayload too_many{4, 0, 0};  // four frames announced, none there
  REQUIRE(wire::emit(ring.writer(), RecordType::StackDef, 1, 50, too_many));
  REQUIRE(wire::emit(ring.writer(), RecordType::StackDef, 0, 60, wire::StackDefPayload{}));  // id 0: none
  const auto all = ring.decode_all();
  REQUIRE(all.size() == 6);
  REQUIRE(std::holds_alternative<decoded::Malformed>(all[0].event));
  CHECK(std::get<decoded::Malformed>(all[0].event).bytes == 24);
  CHECK(all[0].record.name == 0);  // a malformed record's arg is not trusted as a name
  REQUIRE(std::holds_alternative<decoded::Malformed>(all[1].event));
  CHECK(std::get<decoded::Malformed>(all[1].event).bytes == 16);
  CHECK(std::holds_alternative<decoded::Skipped>(all[2].event));
  CHECK(std::holds_alternative<decoded::Skipped>(all[3].event));
  REQUIRE(std::holds_alternative<decoded::Malformed>(all[4].event));
  CHECK(std::get<decoded::Malformed>(all[4].event).bytes == 24);
  CHECK(std::holds_alternative<decoded::Malformed>(all[5].event));
}
