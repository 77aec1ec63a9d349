// Call stacks: StackDef records become the trace's frame and stack tables
// (collector), survive a file round trip (FRAMES/STACKS chunks, event column
// 11), and are attributed and grouped as torch's key_averages(group_by_stack_n).
#include <catch2/catch.hpp>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "collector_fixtures.hpp"
#include "ptprof/analysis/report.hpp"
#include "stacks/native_frames.hpp"
#include "stacks/stack_attribution.hpp"
#include "test_format_fixtures.hpp"

namespace wire = ptprof::wire;
namespace trace = ptprof::trace;
using ptprof::launcher::CollectorOptions;
using ptprof::launcher::ProcessCollector;
using ptprof::testing::MemorySink;
using ptprof::testing::SyntheticRegion;
using ptprof::wire::BoundaryKind;
using ptprof::wire::RecordType;

namespace {

void stack_def(wire::RingWriter& ring, uint32_t id, uint64_t ts, const std::vector<wire::PythonFrameRecord>& frames) {
  wire::StackDefPayload p{uint16_t(frames.size()), 0, 0};
  REQUIRE(wire::emit(ring, RecordType::StackDef, id, ts, p,
                     std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(frames.data()),
                                              frames.size() * sizeof(wire::PythonFrameRecord))));
}

void op(wire::RingWriter& ring, uint32_t name, uint64_t handle, uint32_t stack, uint64_t begin, uint64_t end) {
  wire::OpBeginPayload b{};
  b.handle = handle;
  b.seq_nr = -1;
  b.stack = stack;
  REQUIRE(wire::emit(ring, RecordType::OpBegin, name, begin, b));
  REQUIRE(wire::emit(ring, RecordType::OpEnd, 0, end, wire::OpEndPayload{handle}));
}

}  // namespace

TEST_CASE("stacks: StackDef records give ops their Python stacks, per thread", "[stacks]") {
  SyntheticRegion region{2};
  region.boundary(BoundaryKind::WindowBegin, 0, 0);
  const uint32_t file = region.name("train.py"), fn = region.name("main"), fwd = region.name("forward");
  const uint32_t add = region.name("aten::add");
  // Thread 0: stack 1 = forward (line 12) <- main (line 30); thread 1 has
  // its own stack 1, another stack.
  stack_def(region.ring(0), 1, 5, {{file, fwd, 12, 0}, {file, fn, 30, 0}});
  op(region.ring(0), add, 1, 1, 10, 20);
  op(region.ring(0), add, 2, 1, 30, 40);
  op(region.ring(0), add, 3, 0, 50, 60);  // no stack
  stack_def(region.ring(1), 1, 5, {{file, fn, 31, 0}});
  op(region.ring(1), add, 4, 1, 10, 20);
  CollectorOptions opts;
  opts.output_dir = "out";
  opts.grace = std::chrono::milliseconds(0);
  ptprof::clock::Converter conv{ptprof::clock::Kind::Monotonic};
  MemorySink sink;
  ProcessCollector c(region.take(), ptprof::launcher::FileStem{"host", 4242, 0}, opts, conv, sink);
  c.drain(1000);
  c.finish();
  REQUIRE(sink.traces.size() == 1);
  const trace::Trace& t = sink.traces.begin()->second;
  REQUIRE(t.events.size() == 4);
  REQUIRE(t.stacks.size() == 2);
  std::vector<std::string> seen;
  for (const trace::Event& e : t.events) {
    std::vector<std::string> entries = ptprof::stacks::stack_entries(t, e.stack);
    std::string s;
    for (const auto& x : entries) s += x + ";";
    seen.push_back(s);
  }
  std::sort(seen.begin(), seen.end());
  CHECK(seen == std::vector<std::string>{"", "train.py(12): forward;train.py(30): main;",
                                         "train.py(12): forward;train.py(30): main;", "train.py(31): main;"});
}

TEST_CASE("stacks: frames and stacks round-trip through a file, deduplicated", "[stacks][format]") {
  ptprof::testing::TempDir dir;
  const std::string path = dir.file("s.bin");
  auto w = ptprof::testing::open_writer(path, ptprof::testing::sample_header());
  const uint32_t proc = w->add_process({1, 0, "python", 0});
  const uint32_t th = w->add_thread({proc, 1, "main", 0, 0});
  const uint32_t file = w->intern("train.py"), fn = w->intern("main"), lib = w->intern("/usr/lib/libtorch_cpu.so");
  const std::vector<trace::Frame> a = {{trace::FrameKind::Python, file, fn, 7, 0},
                                       {trace::FrameKind::Native, lib, 0, 0, 0x1234}};
  const uint32_t s1 = w->add_stack(a);
  const uint32_t s2 = w->add_stack({a[0]});
  CHECK(w->add_stack(a) == s1);
  CHECK(s1 != s2);
  trace::Event e;
  e.thread = th;
  e.name = w->intern("aten::add");
  e.start_ns = 10;
  e.end_ns = 20;
  e.stack = s1;
  w->add_event(e);
  e.stack = s2;
  w->add_event(e);
  e.stack = 0;
  w->add_event(e);
  REQUIRE(w->finish().ok());
  auto t = ptprof::format::read_trace(path, nullptr);
  REQUIRE(t.ok());
  REQUIRE(t->frames.size() == 2);
  REQUIRE(t->stacks.size() == 2);
  REQUIRE(t->events.size() == 3);
  CHECK(t->events[0].stack == s1);
  CHECK(t->events[1].stack == s2);
  CHECK(t->events[2].stack == 0);
  const trace::Stack& st = t->stacks[s1 - 1];
  REQUIRE(st.frames.size() == 2);
  CHECK(t->frames[st.frames[0]] == a[0]);
  CHECK(t->frames[st.frames[1]] == a[1]);
}

TEST_CASE("stacks: ops without a stack inherit their parent's; backward ops take their forward op's (torch 1.x)",
          "[stacks][report]") {
  trace::Trace t;
  t.strings = {"", "f.py", "main", "forward", "aten::linear", "aten::addmm", "AddmmBackward0", "aten::mm"};
  t.processes.push_back({});
  t.threads.push_back({});
  t.frames = {{trace::FrameKind::Python, 1, 3, 12, 0}, {trace::FrameKind::Python, 1, 2, 30, 0}};
  t.stacks = {{{0, 1}}};
  auto ev = [&](uint32_t name, int64_t s, int64_t e, uint32_t stack, int64_t seq, uint8_t scope) {
    trace::Event x;
    x.name = name;
    x.start_ns = s;
    x.end_ns = e;
    x.stack = stack;
    x.seq_nr = seq;
    x.scope = scope;
    t.events.push_back(x);
  };
  ev(4, 0, 100, 1, 5, 0);     // aten::linear, its own stack (Python attribution: top level)
  ev(5, 10, 90, 0, 5, 0);     // aten::addmm inside it: inherits
  ev(6, 200, 300, 0, 5, 1);   // AddmmBackward0 (backward function, seq 5)
  ev(7, 210, 290, 0, -1, 0);  // aten::mm under it: the forward op's stack
  const std::vector<uint32_t> eff = ptprof::stacks::effective_stacks(t);
  CHECK(eff == std::vector<uint32_t>{1, 1, 1, 1});

  ptprof::report::Options o;
  o.group_by_stack_n = 1;
  ptprof::report::Report r = ptprof::report::compute_report({{"t", &t}}, o);
  REQUIRE(r.has_stack);
  for (const auto& row : r.rows) CHECK(row.stack == std::vector<std::string>{"f.py(12): forward"});
  o.group_by_stack_n = 0;
  CHECK_FALSE(ptprof::report::compute_report({{"t", &t}}, o).has_stack);

  // torch 2.x flags its backward functions: their ops keep the stack they
  // have (here the backward function's own, the caller of backward()).
  t.stacks.push_back({{1}});
  t.events[2].stack = 2;
  t.events[2].flags = trace::kCallerStacks;
  CHECK(ptprof::stacks::effective_stacks(t) == std::vector<uint32_t>{1, 1, 2, 2});
}

TEST_CASE("stacks: the recording's own native frames are told from the program's", "[stacks]") {
  using ptprof::stacks::is_recording_frame;
  const std::string torch = "/usr/lib/python3/dist-packages/torch/lib/libtorch_cpu.so";
  // The bridge's callbacks, in its module or by name, and the agent's.
  CHECK(is_recording_frame("/home/u/.cache/ptprof/bridges/abc/libptprof_torch.so",
                           "std::unique_ptr<at::ObserverContext> ptprof::torch_bridge::(anonymous "
                           "namespace)::op_start<true, false>(at::RecordFunction const&)"));
  CHECK(is_recording_frame("/opt/ptprof/lib/libptprof_agent.so", ""));
  CHECK(is_recording_frame("/x/libptprof_torch.so", ""));  // unsymbolised, still ours
  // RecordFunction's callback machinery inside libtorch.
  CHECK(is_recording_frame(torch,
                           "c10::Dispatcher::runRecordFunction(at::RecordFunction&, "
                           "std::reference_wrapper<c10::OperatorHandle const>, c10::DispatchKey)"));
  CHECK(is_recording_frame(torch, "at::RecordFunction::runStartCallbacks()"));
  CHECK(is_recording_frame(torch, "at::RecordFunction::before(char const*, long)"));
  CHECK(is_recording_frame(torch, "at::RecordFunction::end()"));
  // The program's: the op itself and the dispatcher that called it.
  CHECK(!is_recording_frame(torch,
                            "at::_ops::addmm::call(at::Tensor const&, at::Tensor const&, at::Tensor const&, "
                            "c10::Scalar const&, c10::Scalar const&)"));
  CHECK(!is_recording_frame(torch, "at::native::addmm_out_cpu(...)"));
  CHECK(!is_recording_frame(torch, ""));
  CHECK(!is_recording_frame("/usr/lib/libmine.so", "my::RecordFunctionHelper()"));
}
