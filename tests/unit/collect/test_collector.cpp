// ProcessCollector (launcher/collect/process_collector.hpp) on synthetic rings: window
// assignment, step records, span closing and the losses ledger, with windows
// kept in memory (collector_fixtures.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "collector_fixtures.hpp"
#include "ptprof/clock.hpp"

using ptprof::launcher::CollectorOptions;
using ptprof::launcher::FileStem;
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
  SyntheticRegion region{2};
  CollectorOptions opts;
  ptprof::clock::Converter conv{ptprof::clock::Kind::Monotonic};  // ticks are ns
  MemorySink sink;
  std::unique_ptr<ProcessCollector> collector;

  Fixture() {
    opts.output_dir = "out";
    opts.host = "host";
    opts.grace = std::chrono::milliseconds(0);
  }
  ProcessCollector& start() {
    collector = std::make_unique<ProcessCollector>(region.take(), FileStem{"host", 4242, 0}, opts, conv, sink);
    return *collector;
  }
  void mark(uint32_t thread, const char* name, uint64_t ts) {
    REQUIRE(wire::emit(region.ring(thread), RecordType::Mark, region.name(name), ts));
  }
  const trace::Trace& window(uint32_t index) {
    const std::string path = "out/host.4242.w00" + std::to_string(index) + ".bin";
    INFO("window file " << path);
    REQUIRE(sink.traces.count(path) == 1);
    return sink.traces.at(path);
  }
  static std::vector<std::string> names(const trace::Trace& t, EventKind kind) {
    std::vector<std::string> out;
    for (const auto& e : t.events)
      if (e.kind == kind) out.push_back(t.strings.at(e.name));
    std::sort(out.begin(), out.end());
    return out;
  }
};

const trace::Event& only(const trace::Trace& t, EventKind kind) {
  const trace::Event* found = nullptr;
  for (const auto& e : t.events) {
    if (e.kind != kind) continue;
    REQUIRE(found == nullptr);
    found = &e;
  }
  REQUIRE(found != nullptr);
  return *found;
}

}  // namespace

TEST_CASE("collector: events go to the window that holds their time, none outside", "[collector]") {
  Fixture f;
  f.region.boundary(BoundaryKind::WindowBegin, 100, 0);
  f.region.boundary(BoundaryKind::WindowEnd, 200, 0);
  f.region.boundary(BoundaryKind::WindowBegin, 300, 1);
  f.mark(0, "before", 50);
  f.mark(0, "first", 150);
  f.mark(1, "between", 250);
  f.mark(1, "second", 350);
  auto& c = f.start();
  c.drain(1000);
  c.finish();
  CHECK(Fixture::names(f.window(0), EventKind::Mark) == std::vector<std::string>{"first"});
  CHECK(Fixture::names(f.window(1), EventKind::Mark) == std::vector<std::string>{"second"});
  CHECK(f.sink.written.size() == 2);
  CHECK(c.events() == 2);
}

TEST_CASE("collector: a span belongs to the window of its begin; ends close it later", "[collector]") {
  Fixture f;
  f.region.boundary(BoundaryKind::WindowBegin, 0, 0);
  f.region.boundary(BoundaryKind::WindowEnd, 200, 0);
  auto& ring = f.region.ring(0);
  REQUIRE(wire::emit(ring, RecordType::RangePush, f.region.name("outer"), 150));
  REQUIRE(wire::emit(ring, RecordType::RangePop, 0, 260));
  auto& c = f.start();
  c.drain(1000);
  c.finish();
  const trace::Event& e = only(f.window(0), EventKind::Range);
  CHECK(e.start_ns == 150);
  CHECK(e.end_ns == 260);
  CHECK((e.flags & trace::kTruncated) == 0);
}

TEST_CASE("collector: an end closes its span and cuts the spans left open above it", "[collector]") {
  Fixture f;
  f.region.boundary(BoundaryKind::WindowBegin, 0, 0);
  auto& ring = f.region.ring(0);
  const uint32_t outer = f.region.name("outer");
  REQUIRE(wire::emit(ring, RecordType::RangePush, outer, 10));
  wire::OpBeginPayload op{};
  op.handle = 7;
  op.seq_nr = -1;
  REQUIRE(wire::emit(ring, RecordType::OpBegin, f.region.name("aten::add"), 20, op));
  // The op's end was dropped: the range's pop closes both, the op truncated.
  REQUIRE(wire::emit(ring, RecordType::RangePop, 0, 30));
  REQUIRE(wire::emit(ring, RecordType::OpEnd, 0, 40, wire::OpEndPayload{7}));  // matches nothing now
  auto& c = f.start();
  c.drain(1000);
  c.finish();
  const trace::Trace& t = f.window(0);
  const trace::Event& range = only(t, EventKind::Range);
  const trace::Event& add = only(t, EventKind::Op);
  CHECK(range.end_ns == 30);
  CHECK((range.flags & trace::kTruncated) == 0);
  CHECK(add.end_ns == 30);
  CHECK((add.flags & trace::kTruncated) != 0);
}

TEST_CASE("collector: a collective's facts go with the op they follow, names as the file's", "[collector]") {
  Fixture f;
  f.region.boundary(BoundaryKind::WindowBegin, 0, 0);
  auto& ring = f.region.ring(0);
  wire::OpBeginPayload op{};
  op.handle = 9;
  op.seq_nr = -1;
  REQUIRE(wire::emit(ring, RecordType::OpBegin, f.region.name("record_param_comms"), 20, op));
  wire::CollectivePayload c{};
  c.handle = 9;
  c.seq = 12;
  c.in_elements = c.out_elements = 1024;
  c.group_size = 4;
  c.rank = 2;
  c.process_group = f.region.name("0");
  c.dtype = f.region.name("Float");
  c.fields = wire::kCollectiveSeq | wire::kCollectiveGroupSize | wire::kCollectiveProcessGroup |
             wire::kCollectiveElementCounts;
  REQUIRE(wire::emit(ring, RecordType::Collective, f.region.name("allreduce"), 21, c));
  wire::CollectivePayload stray = c;  // for an op not open: dropped
  stray.handle = 77;
  REQUIRE(wire::emit(ring, RecordType::Collective, f.region.name("allreduce"), 22, stray));
  REQUIRE(wire::emit(ring, RecordType::OpEnd, 0, 40, wire::OpEndPayload{9}));
  auto& col = f.start();
  col.drain(1000);
  col.finish();
  const trace::Trace& t = f.window(0);
  const trace::Event& e = only(t, EventKind::Op);
  REQUIRE(t.collectives.size() == 1);
  const trace::CollectiveInfo& got = t.collectives[0];
  CHECK(got.thread == e.thread);
  CHECK(got.start_ns == e.start_ns);
  CHECK(t.strings.at(got.name) == "allreduce");
  CHECK(t.strings.at(got.process_group) == "0");
  CHECK(got.process_group_desc == 0);
  CHECK(t.strings.at(got.dtype) == "Float");
  CHECK(got.seq == 12);
  CHECK(got.in_elements == 1024);
  CHECK(got.group_size == 4);
  CHECK(got.rank == 2);
}

TEST_CASE("collector: step records become ProfilerStep spans, cut at the window's end", "[collector]") {
  Fixture f;
  f.region.boundary(BoundaryKind::WindowBegin, 100, 0);
  f.region.boundary(BoundaryKind::WindowEnd, 200, 0);
  auto& ring = f.region.ring(0);
  REQUIRE(wire::emit(ring, RecordType::Step, 1, 100));
  f.mark(0, "work", 120);
  REQUIRE(wire::emit(ring, RecordType::Step, 2, 160));
  REQUIRE(wire::emit(ring, RecordType::Step, 2, 170));  // the same step again restarts it
  auto& c = f.start();
  c.drain(1000);
  c.finish();
  std::vector<std::pair<int64_t, int64_t>> steps;
  for (const auto& e : f.window(0).events)
    if (e.kind == EventKind::Step) steps.emplace_back(e.start_ns, e.end_ns);
  std::sort(steps.begin(), steps.end());
  CHECK(steps == std::vector<std::pair<int64_t, int64_t>>{{100, 160}, {170, 200}});
}

TEST_CASE("collector: the losses ledger counts unnamed, late and malformed records and the agent's losses",
          "[collector]") {
  Fixture f;
  f.region.boundary(BoundaryKind::WindowBegin, 100, 0);
  f.region.boundary(BoundaryKind::WindowEnd, 200, 0);
  auto& ring = f.region.ring(0);
  REQUIRE(wire::emit(ring, RecordType::Mark, 0, 110));  // name lost: the arena was full
  REQUIRE(wire::emit(ring, RecordType::RangePush, f.region.name("long"), 120));
  // An OpBegin too short for its payload.
  uint8_t* p = ring.reserve(sizeof(wire::RecordHeader));
  REQUIRE(p != nullptr);
  const wire::RecordHeader bad{uint16_t(RecordType::OpBegin), sizeof(wire::RecordHeader), 0, 130};
  std::memcpy(p, &bad, sizeof bad);
  ring.commit(sizeof bad);
  f.region.header().strings_dropped.store(3);
  f.region.header().lost_threads.store(2);
  f.region.header().lost_thread_events.store(5);

  auto& c = f.start();
  c.drain(250);
  c.finish_ready_windows();  // grace 0: written with the range cut at 200
  REQUIRE(f.sink.written.size() == 1);
  // The range's end arrives after its window was written: the range was cut
  // there and is not lost. A mark stamped inside the written window is late.
  REQUIRE(wire::emit(ring, RecordType::RangePop, 0, 260));
  REQUIRE(wire::emit(f.region.ring(1), RecordType::Mark, f.region.name("late"), 150));
  c.drain(1000);
  c.finish();

  const trace::Trace& t = f.window(0);
  CHECK(t.losses.unnamed_events == 1);
  CHECK(t.losses.names_refused == 3);
  CHECK(t.losses.lost_threads == 2);
  CHECK(t.losses.lost_thread_events == 5);
  CHECK(t.losses.malformed_bytes == sizeof(wire::RecordHeader));
  CHECK(t.losses.late_events == 0);  // seen after the only window was written
  CHECK(f.sink.written[0].losses == t.losses);
  const trace::Event& range = only(t, EventKind::Range);
  CHECK(range.end_ns == 200);
  CHECK((range.flags & trace::kTruncated) != 0);
  // The collector's own ledger has it all.
  trace::Losses all = c.losses();
  CHECK(all.late_events == 1);
  CHECK(all.unnamed_events == 1);
}

TEST_CASE("collector: a retired thread's slot is drained, closed and freed, and its next thread is another thread",
          "[collector]") {
  Fixture f;
  f.region.boundary(BoundaryKind::WindowBegin, 0, 0);
  wire::ThreadSlot& slot = f.region.header().threads[0];
  auto& ring = f.region.ring(0);
  // The first thread leaves a range open, drops one event and exits.
  REQUIRE(wire::emit(ring, RecordType::RangePush, f.region.name("left-open"), 10));
  f.mark(0, "first", 20);
  ring.count_drop();
  slot.state.store(uint32_t(wire::SlotState::Retired));
  auto& c = f.start();
  c.drain(1000);
  CHECK(slot.state.load() == uint32_t(wire::SlotState::Free));
  // The agent gives the slot (and the ring, where it was) to a new thread,
  // which comes and goes before the launcher looks again.
  slot.tid = 777;
  std::snprintf(slot.name, sizeof slot.name, "second-thread");
  f.mark(0, "second", 30);
  slot.state.store(uint32_t(wire::SlotState::Retired));
  c.drain(1000);
  CHECK(slot.state.load() == uint32_t(wire::SlotState::Free));
  c.finish();
  const trace::Trace& t = f.window(0);
  std::map<std::string, int32_t> tid_of;
  for (const auto& e : t.events) tid_of[t.strings.at(e.name)] = t.threads.at(e.thread).tid;
  CHECK(tid_of.at("first") == 100);
  CHECK(tid_of.at("left-open") == 100);
  CHECK(tid_of.at("second") == 777);
  const trace::Event& open = only(t, EventKind::Range);
  CHECK((open.flags & trace::kTruncated) != 0);
  CHECK(c.threads() == 3);  // the two in slot 0, and slot 1's
  uint64_t dropped = 0;
  for (const auto& th : t.threads) dropped += th.tid == 100 ? th.dropped : 0;
  CHECK(dropped == 1);
}

TEST_CASE("collector: each window charges its events with the costs the agent measured", "[collector][cost]") {
  Fixture f;
  f.region.header().op_cost_ps.store(250'000);  // what the agent published at start-up
  f.region.header().record_cost_ps.store(12'000);
  f.region.boundary(BoundaryKind::WindowBegin, 0, 0);
  f.region.boundary(BoundaryKind::WindowEnd, 1000, 0);
  auto& ring = f.region.ring(0);
  wire::OpBeginPayload b{};
  for (uint64_t i = 0; i < 3; ++i) {
    b.handle = i + 1;
    REQUIRE(wire::emit(ring, RecordType::OpBegin, f.region.name("aten::add"), 100 + 100 * i, b));
    REQUIRE(wire::emit(ring, RecordType::OpEnd, 0, 150 + 100 * i, wire::OpEndPayload{i + 1}));
  }
  REQUIRE(wire::emit(ring, RecordType::RangePush, f.region.name("r"), 500));
  REQUIRE(wire::emit(ring, RecordType::RangePop, 0, 600));
  f.mark(1, "m", 700);
  auto& c = f.start();
  c.drain(2000);
  c.finish();
  REQUIRE(f.sink.written.size() == 1);
  const ptprof::cost::Tally& t = f.sink.written[0].cost;
  CHECK(t.ops == 3);
  CHECK(t.records == 3);  // a range's push and pop, a mark
  CHECK(t.op_ns() == Approx(750.0));
  CHECK(t.record_ns() == Approx(36.0));
  CHECK(t.recorded_ns == 700 - 100);  // no steps: the span of its operators and records
  // The file carries the costs, so the report charges the same.
  const trace::Trace& w = f.window(0);
  REQUIRE(w.processes.size() == 1);
  CHECK(w.processes[0].op_cost_ps == 250'000);
  CHECK(w.processes[0].record_cost_ps == 12'000);
  CHECK(ptprof::cost::tally(w).added_ns() == Approx(t.added_ns()));
}

TEST_CASE("collector: a rank told after a window opened names that window's file and record", "[collector][ranks]") {
  // An mp.spawn rank: no RANK in its environment, its rank known once it
  // initialises its process group, after its first window's file was opened.
  Fixture f;
  f.region.header().dist_known = 1;
  f.region.boundary(BoundaryKind::WindowBegin, 0, 0);
  f.region.boundary(BoundaryKind::WindowEnd, 1000, 0);
  f.region.boundary(BoundaryKind::WindowBegin, 2000, 1);
  f.region.boundary(BoundaryKind::WindowEnd, 3000, 1);
  f.mark(0, "before the group", 100);
  auto& c = f.start();
  c.drain(500);
  REQUIRE(f.sink.traces.count("out/host.4242.w000.bin") == 1);  // opened without a rank
  f.region.header().world_size.store(2);
  f.region.header().rank.store(1);
  f.mark(0, "after", 600);
  f.mark(0, "next window", 2500);
  c.drain(4000);
  c.finish();
  REQUIRE(f.sink.written.size() == 2);
  CHECK(f.sink.written[0].path == "out/host.r1.4242.w000.bin");
  CHECK(f.sink.written[1].path == "out/host.r1.4242.w001.bin");
  CHECK(f.sink.renamed.at("out/host.4242.w000.bin") == "out/host.r1.4242.w000.bin");
  const trace::Trace& first = f.sink.traces.at("out/host.4242.w000.bin");
  REQUIRE(first.processes.size() == 1);
  CHECK(first.processes[0].rank == 1);
  CHECK(first.processes[0].world_size == 2);
  REQUIRE(f.sink.traces.count("out/host.r1.4242.w001.bin") == 1);
  CHECK(f.sink.traces.at("out/host.r1.4242.w001.bin").processes.at(0).rank == 1);
}

// The converter's map is arithmetic on whatever ticks(Tsc) reads (the TSC on
// x86-64, CLOCK_MONOTONIC elsewhere): it is checked on every machine, whether
// or not the launcher would trust this machine's TSC (clock::tsc_usable()).
TEST_CASE("clock: a tick maps to the same ns before and after a resample, and the map increases",
          "[collector][clock]") {
  ptprof::clock::Converter conv(ptprof::clock::Kind::Tsc);
  const uint64_t t0 = ptprof::clock::ticks(ptprof::clock::Kind::Tsc);
  std::vector<uint64_t> ticks{t0 - 1'000'000, t0 - 1, t0, t0 + 1};
  std::vector<int64_t> before;
  before.reserve(ticks.size());
  for (uint64_t t : ticks) before.push_back(conv.to_ns(t));
  for (int i = 0; i < 20; ++i) {
    // A resample happens between an event's children and the event itself.
    volatile uint64_t spin = 0;
    for (int k = 0; k < 200'000; ++k) spin = spin + 1;
    ticks.push_back(ptprof::clock::ticks(ptprof::clock::Kind::Tsc));
    conv.resample();
  }
  for (size_t i = 0; i < before.size(); ++i) CHECK(conv.to_ns(ticks[i]) == before[i]);
  // Every tick from just before each resample to well after its sample.
  size_t backwards = 0;
  for (size_t i = before.size(); i < ticks.size(); ++i) {
    int64_t last = conv.to_ns(ticks[i]);
    for (uint64_t t = ticks[i] + 1; t < ticks[i] + 200'000; ++t) {
      const int64_t ns = conv.to_ns(t);
      backwards += ns < last;
      last = ns;
    }
  }
  CHECK(backwards == 0);
}

// What the launcher uses where the TSC is not trusted: ticks are ns already.
TEST_CASE("clock: monotonic ticks map to themselves, before and after a resample", "[collector][clock]") {
  ptprof::clock::Converter conv(ptprof::clock::Kind::Monotonic);
  const uint64_t now = ptprof::clock::ticks(ptprof::clock::Kind::Monotonic);
  for (uint64_t t : {uint64_t(0), now - 1'000'000, now, now + 1}) CHECK(conv.to_ns(t) == int64_t(t));
  conv.resample();
  for (uint64_t t : {uint64_t(0), now - 1'000'000, now, now + 1}) CHECK(conv.to_ns(t) == int64_t(t));
}
