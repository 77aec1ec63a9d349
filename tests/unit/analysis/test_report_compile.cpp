// torch.compile's compile phase (report_compile.hpp) on hand-built traces,
// checked to the ns: the kinds by the name rules, the union of threads'
// scopes per process, the phase's place first in the claim order, the
// bootstrap's notes counted per step; the text, JSON and HTML reports; and
// the streaming report's fallback to the whole trace.
#include <catch2/catch.hpp>

#include "ptprof/analysis/report.hpp"
#include "ptprof/analysis/report_compile.hpp"
#include "ptprof/analysis/report_format.hpp"
#include "ptprof/analysis/report_html.hpp"
#include "ptprof/record.hpp"
#include "report/report_stream.hpp"
#include "test_format_fixtures.hpp"
#include "test_report_json.hpp"

using namespace ptprof;
using report::CompileKind;
using report::Phase;

namespace {

constexpr auto kBackward = uint8_t(wire::OpScope::BackwardFunction);
constexpr auto kUser = uint8_t(wire::OpScope::UserScope);

// Process 7: main thread (0) and autograd thread (1).
struct CompileTrace {
  trace::Trace t;
  CompileTrace() {
    t.strings.push_back("");
    t.processes.push_back({7, 1, "python train.py", 0});
    t.threads.push_back({0, 70, "main", 0, 0});
    t.threads.push_back({0, 71, "autograd", 0, 0});
  }
  CompileTrace& ev(const std::string& name, int64_t start_ns, int64_t end_ns, uint32_t thread = 0,
                   trace::EventKind kind = trace::EventKind::Op, uint8_t scope = 0, uint64_t arg = 0) {
    t.strings.push_back(name);
    trace::Event e;
    e.name = uint32_t(t.strings.size() - 1);
    e.start_ns = start_ns;
    e.end_ns = end_ns;
    e.thread = thread;
    e.kind = kind;
    e.scope = scope;
    e.arg = arg;
    t.events.push_back(e);
    return *this;
  }
  CompileTrace& scope(const std::string& key, int64_t start_ns, int64_t end_ns, uint32_t thread = 0) {
    return ev(key + " (dynamo_timed)", start_ns, end_ns, thread);
  }
  CompileTrace& mark(const std::string& name, int64_t at) { return ev(name, at, at, 0, trace::EventKind::Mark); }
  CompileTrace& step(uint64_t n, int64_t start_ns, int64_t end_ns) {
    return ev("ProfilerStep#" + std::to_string(n), start_ns, end_ns, 0, trace::EventKind::Step, 0, n);
  }
};

// Step 1 [0, 10000) compiles; step 2 [10000, 11000) does not. Worked out:
// compile = [1000, 9000) on main + [9500, 9900) on the autograd thread
// (the lazy backward compile) = 8400. By kind (each instant to the innermost
// scope a rule names): Dynamo: compile_inner's self [1000,1100) + [8000,9000)
// (gc, named by no rule, is its parent's) + bytecode_tracing [1100,2000) =
// 2000; AOT autograd: call_user_compiler's self [2000,3000) + [7000,8000) +
// backward._backward_impl 400 = 2400; Inductor: compile_fx_inner's self
// [3000,4000) + [5000,7000) = 3000; Autotuning [4000,5000) = 1000.
// Phases of step 1: compile 8400 (the aten::mm Dynamo traced inside it is
// not forward); optimizer [9000,9400) = 400; backward [9450,9950) less the
// compile's [9500,9900) = 100; forward aten::linear [100,900) = 800; other
// 10000 - 9700 = 300.
CompileTrace compiled_loop() {
  CompileTrace c;
  c.step(1, 0, 10000).step(2, 10000, 11000);
  c.ev("aten::linear", 100, 900)
      .scope("_compile.compile_inner", 1000, 9000)
      .scope("bytecode_tracing", 1100, 2000)
      .scope("OutputGraph.call_user_compiler", 2000, 8000)
      .scope("compile_fx_inner", 3000, 7000)
      .ev("aten::mm", 3500, 3600)
      .scope("CachingAutotuner.benchmark_all_configs", 4000, 5000)
      .scope("gc", 8500, 8600)
      .ev("Optimizer.step#SGD.step", 9000, 9400, 0, trace::EventKind::Op, kUser)
      .ev("autograd::engine::evaluate_function: AddmmBackward0", 9450, 9950)
      .scope("backward._backward_impl", 9500, 9900, 1)
      .ev("aten::relu", 10100, 10600);
  c.mark("torch.compile: cache miss: AOTAutogradCache", 2500)
      .mark("torch.compile: graph break [0/0]: call_function BuiltinVariable(print)", 5000)
      .mark("torch.compile: cache hit: FxGraphCache", 6000)
      .mark("torch.compile: recompile [0/1]: 0/0: tensor 'x' size mismatch at index 0. expected 8, actual 16", 8900)
      .mark("torch.compile: recompile [1/1]: 1/0: ___check_obj_id(y)", 20000);  // outside the steps
  return c;
}

int64_t kind(const report::CompileKindTimes& t, CompileKind k) { return t[size_t(k)]; }

}  // namespace

TEST_CASE("compile: the kind a scope's name says", "[report][compile]") {
  CHECK(report::is_compile_scope("_compile.compile_inner (dynamo_timed)"));
  CHECK_FALSE(report::is_compile_scope("_compile.compile_inner"));
  CHECK_FALSE(report::is_compile_scope(" (dynamo_timed)"));
  CHECK(report::compile_kind_of("_compile.compile_inner (dynamo_timed)") == CompileKind::Dynamo);
  CHECK(report::compile_kind_of("bytecode_tracing (dynamo_timed)") == CompileKind::Dynamo);
  CHECK(report::compile_kind_of("build_guards (dynamo_timed)") == CompileKind::Dynamo);
  CHECK(report::compile_kind_of("aot_trace_joint_graph (dynamo_timed)") == CompileKind::AotAutograd);
  CHECK(report::compile_kind_of("backward._backward_impl (dynamo_timed)") == CompileKind::AotAutograd);
  CHECK(report::compile_kind_of("compile_fx.<locals>.fw_compiler_base (dynamo_timed)") == CompileKind::Inductor);
  CHECK(report::compile_kind_of("GraphLowering.codegen (dynamo_timed)") == CompileKind::Inductor);
  CHECK(report::compile_kind_of("PyCodeCache.load_by_key_path (dynamo_timed)") == CompileKind::Inductor);
  // A cache's or an autotuner's scope, whatever else its name says.
  CHECK(report::compile_kind_of("AOTAutogradCache.inductor_load (dynamo_timed)") == CompileKind::Cache);
  CHECK(report::compile_kind_of("inductor_codecache_torch_key (dynamo_timed)") == CompileKind::Cache);
  CHECK(report::compile_kind_of("CachingAutotuner.benchmark_all_configs (dynamo_timed)") == CompileKind::Autotuning);
  CHECK_FALSE(report::compile_kind_of("gc (dynamo_timed)").has_value());
}

TEST_CASE("compile: the bootstrap's marks parsed", "[report][compile]") {
  auto r = report::parse_compile_mark("torch.compile: recompile [0/1]: 0/0: tensor 'x' size mismatch at index 0");
  REQUIRE(r);
  CHECK(r->kind == report::CompileNote::Kind::Recompile);
  CHECK(r->compile_id == "0/1");
  CHECK(r->text == "0/0: tensor 'x' size mismatch at index 0");
  auto b = report::parse_compile_mark("torch.compile: graph break [2/0]: Unsupported: print");
  REQUIRE(b);
  CHECK(b->kind == report::CompileNote::Kind::GraphBreak);
  CHECK(b->text == "Unsupported: print");
  auto h = report::parse_compile_mark("torch.compile: cache hit: FxGraphCache");
  REQUIRE(h);
  CHECK(h->kind == report::CompileNote::Kind::CacheHit);
  CHECK(h->text == "FxGraphCache");
  CHECK_FALSE(report::parse_compile_mark("torch.compile: something else"));
  CHECK_FALSE(report::parse_compile_mark("torch.compile: recompile [0/1 no close"));
  CHECK_FALSE(report::parse_compile_mark("a mark"));
}

TEST_CASE("compile: the phase is the union of the process's compile scopes, claimed first", "[report][compile]") {
  CompileTrace c = compiled_loop();
  std::vector<report::StepPhases> steps = report::step_phases(c.t);
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].ns == report::PhaseTimes{800, 100, 400, 0, 8400, 300});
  CHECK(steps[1].ns == report::PhaseTimes{500, 0, 0, 0, 0, 500});

  report::CompileReport r = report::compile_report(c.t);
  CHECK(r.total_ns == 8400);
  CHECK(r.outside_steps_ns == 0);
  CHECK(kind(r.kinds, CompileKind::Dynamo) == 2000);
  CHECK(kind(r.kinds, CompileKind::AotAutograd) == 2400);
  CHECK(kind(r.kinds, CompileKind::Inductor) == 3000);
  CHECK(kind(r.kinds, CompileKind::Autotuning) == 1000);
  CHECK(kind(r.kinds, CompileKind::Cache) == 0);
  CHECK(kind(r.kinds, CompileKind::Other) == 0);
  REQUIRE(r.steps.size() == 2);
  const report::StepCompile& s1 = r.steps[0];
  CHECK(s1.step == 1);
  CHECK(s1.ns == steps[0].ns[size_t(Phase::Compile)]);  // the phase is the sum of its kinds
  CHECK(s1.kinds == r.kinds);
  CHECK(s1.recompiles == 1);
  CHECK(s1.graph_breaks == 1);
  CHECK(s1.cache_hits == 1);
  CHECK(s1.cache_misses == 1);
  CHECK(r.steps[1].ns == 0);
  CHECK(r.steps[1].recompiles == 0);
  CHECK(r.recompiles == 2);
  CHECK(r.graph_breaks == 1);
  REQUIRE(r.events.size() == 3);  // in time order: the graph break, then the recompiles
  CHECK(r.events[0].note.kind == report::CompileNote::Kind::GraphBreak);
  CHECK(r.events[0].step == 1u);
  CHECK(r.events[1].note.compile_id == "0/1");
  CHECK(r.events[1].note.text == "0/0: tensor 'x' size mismatch at index 0. expected 8, actual 16");
  CHECK(r.events[1].step == 1u);
  CHECK(r.events[2].pid == 7);
  CHECK_FALSE(r.events[2].step.has_value());
}

TEST_CASE("compile: threads' overlapping scopes count once, time outside the steps", "[report][compile]") {
  CompileTrace c;
  c.step(0, 5000, 6000);
  // Two threads compile at once; their union is [0, 3000) + [5500, 5600).
  c.scope("_compile.compile_inner", 0, 2000).scope("compile_fx_inner", 1000, 3000, 1).scope("gc", 5500, 5600);
  report::CompileReport r = report::compile_report(c.t);
  CHECK(r.total_ns == 3100);
  CHECK(kind(r.kinds, CompileKind::Inductor) == 2000);  // claimed before Dynamo where they overlap
  CHECK(kind(r.kinds, CompileKind::Dynamo) == 1000);
  CHECK(kind(r.kinds, CompileKind::Other) == 100);  // an outermost scope no rule names
  CHECK(r.outside_steps_ns == 3000);
  REQUIRE(r.steps.size() == 1);
  CHECK(r.steps[0].ns == 100);

  CompileTrace none;
  none.step(0, 0, 10).ev("aten::add", 0, 10);
  CHECK_FALSE(report::compile_report(none.t).any());
  CHECK(report::compile_report(none.t).steps.empty());
}

TEST_CASE("compile: in the report's text, JSON and HTML, no rows for the marks", "[report][compile]") {
  CompileTrace c = compiled_loop();
  report::Report r = report::compute_report({{"t.bin", &c.t}}, {});
  CHECK(r.compile.total_ns == 8400);
  for (const report::Row& row : r.rows) CHECK(row.name.rfind("torch.compile: ", 0) == std::string::npos);

  const std::string text = report::render_table(r, 0);
  CHECK(text.find("torch.compile (the compile phase") != std::string::npos);
  CHECK(text.find("Recompiles: 2, graph breaks: 1, cache hits: 1, cache misses: 1") != std::string::npos);
  CHECK(text.find("step 1 (pid 7): recompile [0/1]: 0/0: tensor 'x' size mismatch at index 0. expected 8, actual 16") !=
        std::string::npos);
  CHECK(text.find("outside the steps (pid 7): recompile [1/1]") != std::string::npos);
  CHECK(text.find("Graph breaks") != std::string::npos);  // the per-step table's column

  testing::Json j = testing::JsonParser(report::render_json(r, 0)).parse();
  CHECK(j["phases"]["total"]["compile_us"].num == Approx(8.4));
  CHECK(j["phases"]["steps"].arr[0]["compile_us"].num == Approx(8.4));
  const testing::Json& comp = j["compile"];
  CHECK(comp["total_us"].num == Approx(8.4));
  CHECK(comp["inductor_us"].num == Approx(3.0));
  CHECK(comp["recompiles"].num == 2);
  REQUIRE(comp["steps"].arr.size() == 2);
  CHECK(comp["steps"].arr[0]["compile_us"].num == Approx(8.4));
  CHECK(comp["steps"].arr[0]["autotuning_us"].num == Approx(1.0));
  CHECK(comp["steps"].arr[0]["graph_breaks"].num == 1);
  REQUIRE(comp["events"].arr.size() == 3);
  CHECK(comp["events"].arr[1]["kind"].str == "recompile");
  CHECK(comp["events"].arr[1]["step"].num == 1);
  CHECK(comp["events"].arr[1]["reason"].str == "0/0: tensor 'x' size mismatch at index 0. expected 8, actual 16");

  const std::string page = html::render_html(r);
  CHECK(page.find("<table class=\"ops\" id=\"compile\">") != std::string::npos);
  CHECK(page.find("<th>Compile</th>") != std::string::npos);  // the phase table's column
  CHECK(page.find("size mismatch at index 0") != std::string::npos);

  // Without a compile: no section, no key, the phase 0.
  CompileTrace none;
  none.step(0, 0, 10).ev("aten::add", 0, 10);
  report::Report plain = report::compute_report({{"t.bin", &none.t}}, {});
  CHECK(report::render_table(plain, 0).find("torch.compile") == std::string::npos);
  testing::Json pj = testing::JsonParser(report::render_json(plain, 0)).parse();
  CHECK(pj["phases"]["total"]["compile_us"].num == 0);
  CHECK(report::render_json(plain, 0).find("\"compile\":") == std::string::npos);
}

TEST_CASE("compile: a trace with compile scopes is reported from the whole trace", "[report][compile][stream]") {
  testing::TempDir dir;
  const std::string path = dir.file("c.bin");
  CompileTrace c = compiled_loop();
  {
    auto w = testing::open_writer(path, testing::sample_header());
    const uint32_t p = w->add_process(c.t.processes[0]);
    w->add_thread({p, 70, "main", 0, 0});
    w->add_thread({p, 71, "autograd", 0, 0});
    std::vector<uint32_t> ids;
    for (const std::string& s : c.t.strings) ids.push_back(w->intern(s));
    for (trace::Event e : c.t.events) {
      e.name = ids[e.name];
      w->add_event(e);
    }
    REQUIRE(w->finish().ok());
  }
  for (bool phases : {false, true}) {
    auto s = report::detail::stream_trace(path, 0, {}, phases, nullptr);
    REQUIRE(s);
    CHECK_FALSE(s->has_value());
    report::ReportBuilder b{report::Options{}};
    REQUIRE(b.add_file(path, nullptr, phases));
    report::Report r = std::move(b).finish();
    CHECK(r.compile.total_ns == 8400);
    CHECK(r.compile.recompiles == 2);
    REQUIRE(r.phases.size() == 2);
    CHECK(r.phases[0].ns[size_t(Phase::Compile)] == 8400);
  }
}
