// Shared by the export tests: a synthetic training loop with ProfilerStep
// spans, and the checks any Chrome trace export must pass.
#pragma once
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "test_cli_run.hpp"
#include "test_format_fixtures.hpp"
#include "test_report_json.hpp"

namespace ptprof::testing {

// Names the loop gives its events, with how many of each it writes.
struct LoopTrace {
  std::string path;
  std::map<std::string, int> counts;  // by name as written (bytes)
  uint64_t events = 0;
};

constexpr const char* kControlName = "bad\x01name\ttab\x7f";
constexpr const char* kInvalidUtf8Name = "latin1 \xe9t\xe9";

// `steps` ProfilerStep spans on the main thread, each holding a user scope
// with `ops_per_step` ops (shapes on every op; one truncated), plus a worker
// thread with ops outside any step, one op with control characters in its
// name, one with invalid UTF-8, one whose end was never seen and a mark.
inline LoopTrace write_loop(const TempDir& dir, const std::string& name, int steps, int ops_per_step) {
  LoopTrace lt;
  lt.path = dir.file(name);
  auto created = format::TraceWriter::create(lt.path, sample_header());
  REQUIRE(created);
  auto& w = *created;
  REQUIRE(w);
  uint32_t p = w->add_process({4242, 1, "/usr/bin/python3 train.py", 0});
  uint32_t main_thread = w->add_thread({p, 4242, "python3", 0, 0});
  uint32_t worker = w->add_thread({p, 4250, "", 0, 0});
  auto add = [&](trace::Event e, const std::string& n) {
    e.name = w->intern(n);
    w->add_event(e);
    lt.counts[n]++;
    lt.events++;
  };
  uint32_t full = w->intern("[[4, 3], [3], []]");
  uint32_t cut = w->intern("[[2, 3], ...]");
  int64_t t = 6'000'000'000;
  for (int s = 0; s < steps; ++s) {
    trace::Event step;
    step.kind = trace::EventKind::Step;
    step.thread = main_thread;
    step.arg = uint64_t(s) + 1;
    step.start_ns = t;
    trace::Event scope;
    scope.kind = trace::EventKind::Op;
    scope.scope = 7;  // UserScope: record_function
    scope.thread = main_thread;
    scope.start_ns = t + 100;
    int64_t at = t + 200;
    for (int i = 0; i < ops_per_step; ++i) {
      trace::Event op;
      op.thread = main_thread;
      op.start_ns = at;
      op.end_ns = at + 1000 + i % 7;
      op.seq_nr = i;
      op.shapes = i == 0 ? cut : full;
      at = op.end_ns + 50;
      add(op, "aten::op_" + std::to_string(i % 13));
    }
    scope.end_ns = at;
    add(scope, "forward");
    step.end_ns = at + 100;
    add(step, "ProfilerStep#" + std::to_string(s + 1));
    t = step.end_ns + 10;
  }
  trace::Event odd;
  odd.thread = worker;
  odd.start_ns = 6'000'000'100;
  odd.end_ns = 6'000'000'900;
  add(odd, kControlName);
  odd.start_ns = 6'000'001'000;
  odd.end_ns = 6'000'002'000;
  add(odd, kInvalidUtf8Name);
  odd.start_ns = 6'000'002'500;
  odd.end_ns = 6'000'002'800;
  odd.flags = trace::kTruncated;  // its end was never seen
  add(odd, "cut_short");
  trace::Event mark;
  mark.kind = trace::EventKind::Mark;
  mark.thread = worker;
  mark.start_ns = mark.end_ns = 6'000'003'000;
  add(mark, "checkpoint");
  REQUIRE(w->finish());
  return lt;
}

inline Json parse_json_file(const std::string& path) {
  std::string text = slurp(path);
  REQUIRE(!text.empty());
  return JsonParser(text).parse();
}

// The structural promises of a Chrome export (docs/export.md): numeric ts,
// non-negative dur, flows with both ends, ProfilerStep spans enclosing what
// starts in them and nesting per thread. Returns the events per name.
inline std::map<std::string, int> check_chrome_document(const Json& doc) {
  REQUIRE(doc["schemaVersion"].num == 1);
  REQUIRE(doc["deviceProperties"].kind == Json::Array);
  const Json& events = doc["traceEvents"];
  REQUIRE(events.kind == Json::Array);
  std::map<std::string, int> names;
  std::map<double, int> flow_starts, flow_ends;
  std::map<std::pair<double, double>, std::vector<std::pair<double, double>>> spans, steps;
  for (const Json& e : events.arr) {
    const std::string& ph = e["ph"].str;
    if (ph == "M") continue;
    REQUIRE(e["ts"].kind == Json::Number);
    if (ph == "s") flow_starts[e["id"].num]++;
    if (ph == "f") flow_ends[e["id"].num]++;
    if (ph == "X" || ph == "i") names[e["name"].str]++;
    if (ph != "X") continue;
    REQUIRE(e["dur"].kind == Json::Number);
    REQUIRE(e["dur"].num >= 0);
    auto thread = std::make_pair(e["pid"].num, e["tid"].num);
    auto span = std::make_pair(e["ts"].num, e["ts"].num + e["dur"].num);
    spans[thread].push_back(span);
    if (e["name"].str.rfind("ProfilerStep#", 0) == 0) steps[thread].push_back(span);
  }
  CHECK(flow_starts == flow_ends);
  for (auto& [thread, list] : spans) {
    // Nesting per thread: sorted by start (longer first), every span ends
    // within the span it starts in.
    std::sort(list.begin(), list.end(),
              [](auto a, auto b) { return a.first != b.first ? a.first < b.first : a.second > b.second; });
    std::vector<double> open_ends;
    for (auto [start, end] : list) {
      while (!open_ends.empty() && open_ends.back() <= start) open_ends.pop_back();
      if (!open_ends.empty()) CHECK(end <= open_ends.back() + 1e-9);
      open_ends.push_back(end);
    }
    // Whatever starts inside a step ends inside it.
    for (auto [start, end] : list)
      for (auto [s, e] : steps[thread])
        if (start >= s && start < e) CHECK(end <= e + 1e-9);
  }
  return names;
}

// A hand-built CUDA trace, one process (pid 7): thread 0 the CPU (tid 70),
// thread 1 the lane of device 0, stream 7. CUDA calls, the hooked ones and
// CUPTI's records of them, are on the CPU thread; GPU work is on the lane.
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
    ev.kind = trace::EventKind::Op;
    ev.name = w->intern(name);
    ev.start_ns = s;
    ev.end_ns = e;
    ev.thread = cpu;
    ev.arg = handle;
    w->add_event(ev);
  }
  void cuda(trace::EventKind kind, const std::string& name, int64_t s, int64_t e, trace::CudaInfo ci) {
    trace::Event ev;
    ev.kind = kind;
    ev.name = w->intern(name);
    ev.start_ns = s;
    ev.end_ns = e;
    ev.thread = kind == trace::EventKind::CudaApi || kind == trace::EventKind::CuptiApi ? cpu : lane;
    ev.arg = w->add_cuda(ci) + 1;
    w->add_event(ev);
  }
  void mark(const std::string& name, int64_t at) {
    trace::Event ev;
    ev.kind = trace::EventKind::Mark;
    ev.name = w->intern(name);
    ev.start_ns = ev.end_ns = at;
    ev.thread = cpu;
    w->add_event(ev);
  }
};

}  // namespace ptprof::testing
