// A window's trace (launcher/collect/window_trace.hpp) maps the process's
// ids to the file's, each added once; the output stage
// (launcher/collect/window_output.hpp) opens it through the sink with the
// process's header, closes it with steps, drops, losses and cost, and
// reports a window the sink cannot open as lost.
#include <catch2/catch.hpp>

#include "collect/window_output.hpp"
#include "collector_fixtures.hpp"

using ptprof::launcher::CollectorOptions;
using ptprof::launcher::Window;
using ptprof::launcher::WindowOutput;
using ptprof::testing::MemorySink;
using ptprof::testing::StageFixture;
namespace launcher = ptprof::launcher;
namespace trace = ptprof::trace;

namespace {

// A sink whose files cannot be opened (a full disk, say).
class RefusingSink final : public launcher::WindowSink {
 public:
  ptprof::Result<std::unique_ptr<ptprof::format::TraceSink>> open(const std::string&, const trace::Header&) override {
    return ptprof::Status::error("no room");
  }
  void window_written(const launcher::WindowFile&) override {}
  void window_failed(const launcher::WindowFile& f, const std::string& error) override {
    failed.push_back(f.path + ": " + error);
  }
  std::vector<std::string> failed;
};

}  // namespace

TEST_CASE("window trace: each name, shapes text, thread and stack goes into the file once", "[collector][windows]") {
  StageFixture f;
  const uint32_t mm = f.region.name("aten::mm"), file = f.region.name("train.py");
  const uint32_t a = f.trace.name(mm);
  CHECK(f.trace.name(mm) == a);
  CHECK(f.text(a) == "aten::mm");
  CHECK(f.text(f.trace.name(999)) == "<unknown>");  // never in the arena
  CHECK(f.trace.shapes(0) == 0);
  const uint32_t sh = f.trace.shapes(f.shapes.intern("[[1]]"));
  CHECK(f.text(sh) == "[[1]]");
  CHECK(f.trace.thread(1) == 0);  // the file's first thread
  CHECK(f.trace.thread(0) == 1);
  CHECK(f.trace.thread(1) == 0);
  REQUIRE(f.out.threads.size() == 2);
  CHECK(f.out.threads[0].tid == 101);
  CHECK(f.trace.stack(0, 1) == 0);  // never defined
  f.threads.define_stack(0, 1, {trace::Frame{trace::FrameKind::Python, file, mm, 7, 0}});
  const uint32_t s = f.trace.stack(0, 1);
  CHECK(s != 0);
  CHECK(f.trace.stack(0, 1) == s);
  REQUIRE(f.out.frames.size() == 1);
  CHECK(f.text(f.out.frames[0].file) == "train.py");
  CHECK(f.text(f.out.frames[0].function) == "aten::mm");
  CHECK(f.trace.lane(0, 7) == f.trace.lane(0, 7));
  CHECK(f.out.threads.size() == 3);
}

TEST_CASE("window trace: the program's events are charged, the agent's notes and steps are not", "[collector][cost]") {
  StageFixture f;
  f.region.header().op_cost_ps.store(2000);
  f.region.header().record_cost_ps.store(500);
  f.context.read_costs();  // as the collector does before each drain
  trace::Event op;
  op.kind = trace::EventKind::Op;
  op.start_ns = 100;
  op.end_ns = 400;
  f.trace.add(op);
  trace::Event mark;
  mark.kind = trace::EventKind::Mark;
  mark.start_ns = mark.end_ns = 1000;
  f.trace.add(mark, /*charged=*/false);
  CHECK(f.trace.events() == 2);
  CHECK(f.out.events.size() == 2);
  CHECK(f.trace.cost().ops == 1);
  CHECK(f.trace.cost().op_ps == 2000);
  CHECK(f.trace.cost().records == 0);
  CHECK(f.trace.events_span_ns() == 300);
}

TEST_CASE("window output: a window's file has the process, its steps, drops, losses and end", "[collector][windows]") {
  StageFixture f;
  f.region.header().op_cost_ps.store(1000);
  f.context.read_costs();
  CollectorOptions opts;
  opts.output_dir = "out";
  opts.host = "host";
  opts.schedule = "wait=1";
  MemorySink sink;
  WindowOutput output(opts, f.context, ptprof::launcher::FileStem{"host", 4242, 0}, sink);
  Window w;
  w.index = 3;
  w.begin = 100;
  w.end = 500;
  w.steps.closed.push_back({7, 150, 450, 0});
  REQUIRE(output.open(w));
  CHECK(output.open(w));  // opened once
  trace::Losses losses;
  losses.late_events = 2;
  output.close(w, 500, {{1, 5}, {1, 2}}, losses);
  CHECK(w.done);
  CHECK_FALSE(output.open(w));  // never opened again
  const trace::Trace& t = sink.traces.at("out/host.4242.w003.bin");
  CHECK(t.header.window == 3);
  CHECK(t.header.window_start_ns == 100);
  CHECK(t.header.window_end_ns == 500);
  CHECK(t.header.schedule == "wait=1");
  REQUIRE(t.processes.size() == 1);
  CHECK(t.processes[0].pid == 4242);
  CHECK(t.processes[0].op_cost_ps == 1000);
  REQUIRE(t.events.size() == 1);
  CHECK(t.events[0].kind == trace::EventKind::Step);
  CHECK(t.strings.at(t.events[0].name) == "ProfilerStep#7");
  CHECK(t.events[0].arg == 7);
  CHECK(t.threads.at(t.events[0].thread).tid == 100);
  REQUIRE(t.threads.size() == 2);
  CHECK(t.threads[1].dropped == 7);  // thread instance 1's drops, summed
  CHECK(t.losses.late_events == 2);
  REQUIRE(sink.written.size() == 1);
  CHECK(sink.written[0].events == 1);
  CHECK(sink.written[0].dropped == 7);
  CHECK(sink.written[0].cost.recorded_ns == 300);  // the step's time
  CHECK(sink.written[0].window == 3);
}

TEST_CASE("window output: a window whose file cannot be opened is lost, and the sink is told", "[collector][windows]") {
  StageFixture f;
  CollectorOptions opts;
  opts.output_dir = "out";
  opts.run_id = "run1";
  RefusingSink sink;
  WindowOutput output(opts, f.context, ptprof::launcher::FileStem{"host", 4242, 0}, sink);
  Window w;
  CHECK_FALSE(output.open(w));
  CHECK(w.done);
  CHECK(sink.failed == std::vector<std::string>{"out/host.4242.run1.w000.bin: no room"});
  CHECK_FALSE(output.open(w));
  CHECK(sink.failed.size() == 1);
}
