// The report aggregated as each file is read (ReportBuilder::add_file) equals
// the one computed from whole traces, on generated traces with deep nesting
// across chunk boundaries, folds, filtered names, steps, marks, async events,
// several threads, drops and windows.
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>

#include "ptprof/analysis/report.hpp"
#include "ptprof/analysis/report_format.hpp"
#include "ptprof/cuda_status.hpp"
#include "report/report_stream.hpp"
#include "test_format_fixtures.hpp"

namespace ptprof {
namespace {

using testing::TempDir;
using trace::EventKind;

struct Gen {
  std::mt19937_64 rng;
  format::TraceWriter& w;
  std::vector<uint32_t> names;        // a few, so that folds and shared keys happen
  std::vector<uint32_t> phase_names;  // an optimizer's, a DataLoader's, backward's
  uint32_t filtered = 0;
  uint64_t step = 0;

  Gen(uint64_t seed, format::TraceWriter& writer) : rng(seed), w(writer) {
    for (const char* n : {"aten::add", "aten::mul", "aten::linear", "aten::addmm", "my_range"})
      names.push_back(w.intern(n));
    filtered = w.intern("aten::is_leaf");
    for (const char* n : {"Optimizer.step#SGD.step", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                          "autograd::engine::evaluate_function: AddBackward0"})
      phase_names.push_back(w.intern(n));
  }
  // Names of a thread with steps: of every phase.
  uint32_t name(bool phases) {
    if (phases && pick(0, 3) == 0) return phase_names[size_t(pick(0, 2))];
    return names[size_t(pick(0, 4))];
  }
  int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

  // The events of [start, end) and what nests in it, children first (the
  // launcher's order); `name` as chosen by the parent.
  void tree(std::vector<trace::Event>& out, uint32_t thread, int64_t start, int64_t end, uint32_t name, int depth,
            bool phases) {
    int64_t t = start;
    const bool only_child_same = pick(0, 4) == 0;  // a chain torch folds
    while (depth < 6 && t < end && pick(0, 3) != 0) {
      int64_t s = pick(0, 2) == 0 ? t : std::min(end, t + pick(0, 40));
      int64_t e = pick(0, 5) == 0 ? s : std::min(end, s + pick(1, 400));  // zero-length ones too
      if (pick(0, 6) == 0) e = end;
      // A zero-length event at its parent's end lies outside it, and the same
      // span twice is nested by file position: both leave the streaming path.
      if (s >= end || (s == start && e == end)) break;
      const uint32_t n = only_child_same ? name : pick(0, 9) == 0 ? filtered : this->name(phases);
      tree(out, thread, s, e, n, depth + 1, phases);
      t = e + pick(0, 1);
      if (only_child_same || s == e) break;  // nothing else at a zero-length one's instant
    }
    trace::Event ev;
    ev.thread = thread;
    ev.start_ns = start;
    ev.end_ns = end;
    ev.name = name;
    ev.kind = name == names[4] ? EventKind::Range : EventKind::Op;
    out.push_back(ev);
  }

  std::vector<trace::Event> thread_events(uint32_t thread, int64_t from, int tops, bool steps) {
    std::vector<trace::Event> out;
    int64_t t = from;
    for (int i = 0; i < tops; ++i) {
      int64_t s = t + pick(0, 30), e = s + pick(0, 3000);
      if (steps) {
        int64_t u = s;
        while (u < e && pick(0, 3) != 0) {
          const int64_t b = u + pick(0, 20), d = std::min(e, b + pick(0, 800));
          if (b >= e || (b == s && d == e)) break;
          tree(out, thread, b, d, name(true), 1, true);
          u = d + 1;
        }
        trace::Event st;
        st.thread = thread;
        st.kind = EventKind::Step;
        st.start_ns = s;
        st.end_ns = e;
        st.arg = ++step;
        st.name = pick(0, 5) == 0 ? 0 : w.intern("ProfilerStep#" + std::to_string(st.arg));
        out.push_back(st);
      } else {
        tree(out, thread, s, e, name(false), 0, false);
      }
      t = e;
    }
    return out;
  }
};

// Writes a trace of three threads (two with steps) whose events interleave
// at random, with flushes (chunk boundaries) anywhere.
void write_trace(const std::string& path, uint64_t seed, uint32_t window) {
  trace::Header h = testing::sample_header();
  h.window = window;
  auto w = testing::open_writer(path, h);
  Gen g(seed, *w);
  // Backward time is the process's: the threads with steps are of two.
  const uint32_t p = w->add_process({4242, 1, "python train.py", 1000});
  const uint32_t q = w->add_process({4243, 1, "python train.py", 1000});
  w->set_process_cost(p, 310'000, 9'500);
  std::vector<uint32_t> threads;
  threads.reserve(3);
  for (int i = 0; i < 3; ++i)
    threads.push_back(w->add_thread({i == 1 ? q : p, 100 + i, "t" + std::to_string(i), 0, 0}));
  std::vector<std::vector<trace::Event>> per_thread;
  per_thread.reserve(3);
  for (uint32_t th = 0; th < 3; ++th) per_thread.push_back(g.thread_events(threads[th], 1'000'000, 40, th != 2));
  const uint32_t mark = w->intern("a mark"), note = w->intern(std::string(wire::kCudaNotePrefix) + "test");
  std::vector<size_t> next(3, 0);
  for (;;) {
    std::vector<uint32_t> open;
    for (uint32_t th = 0; th < 3; ++th)
      if (next[th] < per_thread[th].size()) open.push_back(th);
    if (open.empty()) break;
    const uint32_t th = open[size_t(g.pick(0, int64_t(open.size()) - 1))];
    w->add_event(per_thread[th][next[th]++]);
    if (g.pick(0, 40) == 0) {  // marks and async events, anywhere
      trace::Event e;
      e.thread = threads[th];
      e.name = g.pick(0, 3) == 0 ? note : mark;
      e.kind = EventKind::Mark;
      e.start_ns = e.end_ns = 1'000'000 + g.pick(0, 100'000);
      w->add_event(e);
      e.kind = EventKind::Op;
      e.flags = trace::kAsync;
      e.name = g.names[0];
      e.end_ns = e.start_ns + g.pick(0, 50'000);
      w->add_event(e);
    }
    if (g.pick(0, 30) == 0) w->flush();  // an event chunk ends here
  }
  w->set_thread_dropped(threads[1], 17);
  trace::Losses l;
  l.late_events = 3;
  w->set_losses(l);
  REQUIRE(w->finish().ok());
}

report::Report full(const std::vector<std::string>& files, const report::Options& o) {
  report::ReportBuilder b(o);
  for (const auto& f : files) {
    std::vector<std::string> warnings;
    auto t = format::read_trace(f, &warnings);
    REQUIRE(t);
    b.add(f, *t);
  }
  return std::move(b).finish();
}

report::Report streamed(const std::vector<std::string>& files, const report::Options& o, bool phases) {
  report::ReportBuilder b(o);
  for (const auto& f : files) {
    std::vector<std::string> warnings;
    auto window = b.add_file(f, &warnings, phases);
    INFO(window.error());
    REQUIRE(window);
  }
  return std::move(b).finish();
}

void check_same(report::Report a, const report::Report& b, bool phases) {
  CHECK(report::render_table(a, 0) == report::render_table(b, 0));
  CHECK(report::render_csv(a, 0) == report::render_csv(b, 0));
  if (!phases) {
    CHECK_FALSE(a.phases.empty());
    CHECK(b.phases.empty());
    a.phases.clear();
  }
  CHECK(report::render_json(a, 0) == report::render_json(b, 0));
}

}  // namespace

TEST_CASE("report: aggregating as the files are read equals the whole-trace computation", "[report][stream]") {
  TempDir dir;
  std::vector<std::string> files;
  for (uint32_t i = 0; i < 3; ++i) {
    files.push_back(dir.file("w" + std::to_string(i) + ".bin"));
    write_trace(files.back(), 1000 + i, i % 2);
  }
  for (const std::string& f : files) {  // the streaming path, not the fallback, is what is compared
    for (bool phases : {false, true}) {
      auto s = report::detail::stream_trace(f, 0, {}, phases, nullptr);
      REQUIRE(s);
      CHECK(s->has_value());
    }
  }
  for (bool phases : {false, true}) {
    report::Options o;
    check_same(full(files, o), streamed(files, o, phases), phases);
    o.group_by_input_shape = true;
    o.sort_by = report::SortKey::SelfCpuTimeTotal;
    check_same(full(files, o), streamed(files, o, phases), phases);
    o.window = 1;
    check_same(full(files, o), streamed(files, o, phases), phases);
  }
}

TEST_CASE("report: events that do not nest in the writer's order are computed whole", "[report][stream]") {
  TempDir dir;
  auto check = [&](const std::vector<std::pair<int64_t, int64_t>>& spans) {
    const std::string path = dir.file("x.bin");
    {
      auto w = testing::open_writer(path, testing::sample_header());
      const uint32_t p = w->add_process({1, 0, "", 0});
      const uint32_t th = w->add_thread({p, 1, "", 0, 0});
      const uint32_t a = w->intern("a"), b = w->intern("b");
      for (size_t i = 0; i < spans.size(); ++i) {
        trace::Event e;
        e.thread = th;
        e.name = i % 2 ? a : b;
        e.start_ns = spans[i].first;
        e.end_ns = spans[i].second;
        w->add_event(e);
      }
      REQUIRE(w->finish().ok());
    }
    auto s = report::detail::stream_trace(path, 0, {}, false, nullptr);
    REQUIRE(s);
    CHECK_FALSE(s->has_value());
    check_same(full({path}, {}), streamed({path}, {}, true), true);
  };
  check({{0, 10}, {5, 15}});         // partial overlap
  check({{5, 8}, {5, 8}, {0, 20}});  // the same span twice: torch nests them by file position
  check({{0, 20}, {5, 8}});          // a parent ahead of its child
}

}  // namespace ptprof
