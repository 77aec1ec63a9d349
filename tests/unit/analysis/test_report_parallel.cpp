// ReportBuilder::add_files reads several files at once and adds them in
// order: its report equals that of add_file one file after the other, on a
// job of ranks with collectives (the full computation), streamable traces,
// the same process in two windows, drops, and a damaged file.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "ptprof/analysis/report.hpp"
#include "ptprof/analysis/report_format.hpp"
#include "test_cli_run.hpp"
#include "test_format_fixtures.hpp"

namespace ptprof {
namespace {

using testing::TempDir;
using trace::EventKind;

struct RankFile {
  uint32_t rank = 0;
  uint32_t window = 0;
  bool collectives = true;  // false: a trace the report streams
  uint64_t steps = 6;
  uint64_t dropped = 0;
};

// One rank's file as the launcher names it: steps of nested ops, an
// allreduce (c10d's op around gloo's work) in each step when asked for.
std::string write_rank(const TempDir& dir, const RankFile& f) {
  trace::Header h = testing::sample_header();
  h.host = "node" + std::to_string(f.rank / 4);
  h.window = f.window;
  const int32_t pid = int32_t(10000 + f.rank);
  char window[8];
  std::snprintf(window, sizeof window, "w%03u", f.window);
  const std::string name = h.host + ".r" + std::to_string(f.rank) + "." + std::to_string(pid) + "." + window + ".bin";
  auto w = testing::open_writer(dir.file(name), h);
  std::vector<uint32_t> names;
  names.reserve(12);
  for (int i = 0; i < 12; ++i) names.push_back(w->intern("aten::op_" + std::to_string(i % (5 + f.rank % 3))));
  const uint32_t c10d = w->intern("c10d::allreduce_"), gloo = w->intern("gloo:all_reduce");
  trace::Process p;
  p.pid = pid;
  p.ppid = 1;
  p.cmdline = "python train.py";
  p.rank = int32_t(f.rank);
  p.world_size = 8;
  p.start_ns = 1000;  // the same process in every window's file
  const uint32_t proc = w->add_process(p);
  const uint32_t thread = w->add_thread({proc, pid, "python", 0, 0});
  if (f.dropped) w->set_thread_dropped(thread, f.dropped);
  int64_t clock = 5'000'000'000 + int64_t(f.window) * 1'000'000'000 + int64_t(f.rank) * 37;
  for (uint64_t step = 1; step <= f.steps; ++step) {
    trace::Event s;
    s.kind = EventKind::Step;
    s.thread = thread;
    s.arg = step + f.window * 100;
    s.name = w->intern("ProfilerStep#" + std::to_string(s.arg));
    s.start_ns = clock;
    for (uint64_t i = 0; i < 20; ++i) {
      trace::Event top, child;
      top.thread = child.thread = thread;
      const bool comm = f.collectives && i == 10;
      top.name = comm ? c10d : names[(i + step) % names.size()];
      child.name = comm ? gloo : names[(i * 7 + f.rank) % names.size()];
      top.start_ns = clock + 300;
      child.start_ns = top.start_ns + 200;
      child.end_ns = child.start_ns + 1500 + int64_t((i * 131 + f.rank * 17 + step) % 700);
      top.end_ns = child.end_ns + 150 + int64_t(f.rank);
      clock = top.end_ns;
      w->add_event(child);
      w->add_event(top);
    }
    s.end_ns = clock + 200;
    clock = s.end_ns;
    w->add_event(s);
  }
  REQUIRE(w->finish().ok());
  return dir.file(name);
}

struct Built {
  std::string json, table;
  std::vector<uint32_t> windows;
  std::vector<std::string> warnings;
  std::string error;
};

Built finish(report::ReportBuilder&& b, Built out) {
  const report::Report r = std::move(b).finish();
  out.json = report::render_json(r, 0);
  out.table = report::render_table(r, 0);
  return out;
}

Built one_by_one(const std::vector<std::string>& files, const report::Options& o) {
  report::ReportBuilder b(o);
  Built out;
  for (const std::string& f : files) {
    auto window = b.add_file(f, &out.warnings, true);
    if (!window) {
      out.error = window.error();
      break;
    }
    out.windows.push_back(*window);
  }
  return finish(std::move(b), std::move(out));
}

Built at_once(const std::vector<std::string>& files, const report::Options& o, unsigned threads) {
  report::ReportBuilder b(o);
  Built out;
  const Status s = b.add_files(
      files, true, threads,
      [&](const std::vector<std::string>& w) { out.warnings.insert(out.warnings.end(), w.begin(), w.end()); },
      &out.windows);
  if (!s.ok()) out.error = s.message();
  return finish(std::move(b), std::move(out));
}

void check_same(const Built& serial, const Built& parallel) {
  CHECK(parallel.error == serial.error);
  CHECK(parallel.windows == serial.windows);
  CHECK(parallel.warnings == serial.warnings);
  CHECK(parallel.json == serial.json);  // byte for byte
  CHECK(parallel.table == serial.table);
}

std::vector<std::string> job(const TempDir& dir) {
  std::vector<std::string> files;
  for (uint32_t rank = 0; rank < 8; ++rank) {
    RankFile f;
    f.rank = rank;
    f.collectives = rank % 3 != 1;  // these stream
    f.steps = 4 + rank % 3;
    f.dropped = rank == 5 ? 7 : 0;
    files.push_back(write_rank(dir, f));
    f.window = 1;  // the same process again: its rows, steps and collectives add up
    files.push_back(write_rank(dir, f));
  }
  return files;
}

}  // namespace

TEST_CASE("add_files on several threads gives add_file's report, byte for byte", "[report][parallel]") {
  TempDir dir;
  const std::vector<std::string> files = job(dir);
  report::Options all;
  report::Options window;
  window.window = 1;
  report::Options shapes;
  shapes.group_by_input_shape = true;
  shapes.sort_by = report::SortKey::SelfCpuTimeTotal;
  for (const report::Options& o : {all, window, shapes}) {
    const Built serial = one_by_one(files, o);
    REQUIRE(serial.error.empty());
    CHECK(serial.json.find("c10d::allreduce_") != std::string::npos);
    for (unsigned threads : {0u, 1u, 2u, 3u, 8u, 64u}) {
      INFO("threads " << threads);
      check_same(serial, at_once(files, o, threads));
    }
  }
}

TEST_CASE("add_files stops at the first damaged file, as add_file one by one does", "[report][parallel]") {
  TempDir dir;
  std::vector<std::string> files = job(dir);
  testing::spit(dir.file("damaged.bin"), "not a trace at all");
  files.insert(files.begin() + 5, dir.file("damaged.bin"));
  const Built serial = one_by_one(files, report::Options{});
  REQUIRE(!serial.error.empty());
  REQUIRE(serial.windows.size() == 5);
  for (unsigned threads : {1u, 2u, 4u}) {
    INFO("threads " << threads);
    check_same(serial, at_once(files, report::Options{}, threads));
  }
}

TEST_CASE("ptprof report: PTPROF_REPORT_THREADS=1 and the default print the same", "[report][parallel][cli]") {
  TempDir dir;
  job(dir);
  for (const char* format : {"json", "table"}) {
    const std::string args = std::string("report --format ") + format + " " + dir.path().string();
    auto with = [&](const char* threads) {
      return testing::run_ptprof(args, false, "PTPROF_REPORT_THREADS=" + std::string(threads));
    };
    auto serial = with("1");
    auto parallel = with("4");
    auto by_default = testing::run_ptprof(args, false);
    INFO(serial.out.substr(0, 2000));
    REQUIRE(serial.status == 0);
    CHECK(serial.out.find("c10d::allreduce_") != std::string::npos);
    CHECK(parallel.status == 0);
    CHECK(parallel.out == serial.out);
    CHECK(by_default.out == serial.out);
  }
}

}  // namespace ptprof
