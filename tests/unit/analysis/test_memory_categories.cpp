// Memory by category (issue #26 item 2): the TENSORS chunk and torch's rules
// on small traces built by hand. The equality with torch's own
// export_memory_timeline on real programs is test_memory_categories.py's.
#include <catch2/catch.hpp>

#include "ptprof/analysis/memory_categories.hpp"
#include "ptprof/record.hpp"
#include "test_format_fixtures.hpp"

using namespace ptprof;
using ptprof::testing::TempDir;

namespace {

trace::TensorRef ref(uint64_t impl, uint64_t storage, uint64_t nbytes, uint16_t index, uint8_t flags) {
  trace::TensorRef r;
  r.impl = impl;
  r.storage = storage;
  r.nbytes = nbytes;
  r.index = index;
  r.device_type = 0;
  r.device_index = -1;
  r.flags = uint8_t(flags | wire::kTensorStrided);
  return r;
}

// One thread of one process; ops and allocations added in time order.
struct Builder {
  trace::Trace t;
  Builder() {
    t.strings = {""};
    t.processes.push_back({});
    t.processes[0].pid = 7;
    t.threads.push_back({});
  }
  uint32_t name(const std::string& s) {
    t.strings.push_back(s);
    return uint32_t(t.strings.size() - 1);
  }
  void op(const std::string& n, int64_t start, int64_t end, std::vector<trace::TensorRef> inputs, bool schema = true,
          uint8_t scope = uint8_t(wire::OpScope::Function)) {
    trace::Event e;
    e.kind = trace::EventKind::Op;
    e.name = name(n);
    e.start_ns = start;
    e.end_ns = end;
    e.scope = scope;
    t.events.push_back(e);
    trace::TensorGroup g;
    g.ts_ns = start;
    g.kind = uint8_t(wire::TensorGroupKind::OpInputs);
    g.flags = schema ? wire::kTensorGroupSchema : 0;
    g.tensors = std::move(inputs);
    t.tensor_groups.push_back(std::move(g));
  }
  void memory(int64_t at, uint64_t ptr, int64_t bytes) {
    trace::MemoryInfo m;
    m.ptr = ptr;
    m.bytes = bytes;
    t.memory.push_back(m);
    trace::Event e;
    e.kind = trace::EventKind::Memory;
    e.start_ns = e.end_ns = at;
    e.arg = t.memory.size();
    t.events.push_back(e);
  }
  void step(uint64_t n, int64_t start, int64_t end) {
    trace::Event e;
    e.kind = trace::EventKind::Step;
    e.start_ns = start;
    e.end_ns = end;
    e.arg = n;
    t.events.push_back(e);
  }
};

size_t idx(memory::Category c) { return size_t(c); }

}  // namespace

TEST_CASE("tensor groups round-trip in the TENSORS chunk", "[format][memory]") {
  TempDir dir;
  const std::string path = dir.file("t.bin");
  auto w = testing::open_writer(path, testing::sample_header());
  REQUIRE(w);
  w->add_process({});
  const uint32_t th = w->add_thread({0, 10, "main", 0, 0});
  trace::TensorGroup g;
  g.thread = th;
  g.ts_ns = 123;
  g.owner = 0xdeadbeef;
  g.kind = uint8_t(wire::TensorGroupKind::Optimizer);
  g.tensors = {ref(0x1000, 0x2000, 4096, 0, 0), ref(0x3000, 0, 0, 1, wire::kTensorMutable)};
  g.tensors[1].role = uint8_t(wire::TensorRole::State);
  g.tensors[1].device_type = 1;
  g.tensors[1].device_index = 3;
  w->add_tensor_group(g);
  REQUIRE(w->finish().ok());
  auto t = format::read_trace(path, nullptr);
  INFO(t.error());
  REQUIRE(t);
  REQUIRE(t->tensor_groups.size() == 1);
  CHECK(t->tensor_groups[0] == g);

  SECTION("a group naming a thread the file lacks is refused by the writer") {
    auto bad = testing::open_writer(dir.file("d.bin"), testing::sample_header());
    REQUIRE(bad);
    trace::TensorGroup x;
    x.thread = 4;
    bad->add_tensor_group(x);
    CHECK_FALSE(bad->finish().ok());
  }
}

TEST_CASE("memory categories follow torch's rules", "[memory]") {
  SECTION("no tensor identity: unavailable, saying what to record") {
    Builder b;
    b.memory(10, 0x100, 64);
    const auto r = memory::memory_categories(b.t);
    CHECK(r.timelines.empty());
    CHECK(r.unavailable.find("--record-shapes") != std::string::npos);
  }

  SECTION("allocated and freed inside one op: a temporary; a tensor no op reads: unknown") {
    Builder b;
    b.op("aten::foo", 100'000, 200'000, {});
    b.memory(110'000, 0x100, 64);  // allocated in aten::foo...
    b.op("aten::bar", 120'000, 130'000, {ref(1, 0x100, 64, 0, 0)});
    b.memory(150'000, 0x100, -64);  // ...and freed in it
    b.memory(300'000, 0x900, 32);   // no tensor names it
    b.step(0, 0, 400'000);
    const auto r = memory::memory_categories(b.t);
    REQUIRE(r.unavailable.empty());
    REQUIRE(r.timelines.size() == 1);
    const auto& tl = r.timelines[0];
    CHECK(tl.pid == 7);
    CHECK(tl.at(120)[idx(memory::Category::Temporary)] == 64);  // microseconds
    CHECK(tl.at(160)[idx(memory::Category::Temporary)] == 0);
    CHECK(tl.at(400)[idx(memory::Category::Unknown)] == 32);
  }

  SECTION("AccumulateGrad's detach names a gradient; the tensor it reads from a forward input and state") {
    Builder b;
    // Forward: x (preexisting input) @ w (preexisting) -> y, allocated at 1 us.
    b.op("aten::mm", 1000, 2000, {ref(1, 0x10, 16, 0, 0), ref(2, 0x20, 16, 1, 0)});
    b.memory(1500, 0x30, 16);
    // Backward: AccumulateGrad detaches the new gradient g (allocated at 3 us).
    b.op("MmBackward0", 2500, 3200, {ref(3, 0x30, 16, 0, 0)}, false, uint8_t(wire::OpScope::BackwardFunction));
    b.memory(2600, 0x40, 16);
    b.op("torch::autograd::AccumulateGrad", 3300, 3600, {ref(4, 0x40, 16, 0, 0)}, false,
         uint8_t(wire::OpScope::BackwardFunction));
    b.op("aten::detach", 3310, 3400, {ref(4, 0x40, 16, 0, 0)});
    // The optimizer: w.add_(g), so w depends on a gradient.
    b.op("aten::add_", 5000, 5100, {ref(2, 0x20, 16, 0, wire::kTensorMutable), ref(4, 0x40, 16, 1, 0)});
    b.step(0, 0, 6000);
    const auto r = memory::memory_categories(b.t);
    REQUIRE(r.timelines.size() == 1);
    const auto end = r.timelines[0].at(6);
    CHECK(end[idx(memory::Category::Gradient)] == 16);
    CHECK(end[idx(memory::Category::Parameter)] == 16);  // w: read in forward, updated from a gradient
    CHECK(end[idx(memory::Category::Input)] == 16);      // x
  }
}
