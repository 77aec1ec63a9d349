// Ranks: the PROCESS_ATTRIBUTES chunk round-trips and is skipped by readers
// that do not know it; the report's processes, ranks and stragglers, and the
// Chrome export's distributedInfo, from hand-built traces of a 2-rank job
// with a DataLoader worker.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <regex>
#include <sstream>

#include "format/byte_io.hpp"
#include "format/crc32c.hpp"
#include "ptprof/analysis/export.hpp"
#include "ptprof/analysis/report.hpp"
#include "ptprof/analysis/report_format.hpp"
#include "ptprof/shm_abi.hpp"
#include "test_format_fixtures.hpp"
#include "test_report_json.hpp"

using namespace ptprof;
using ptprof::testing::TempDir;

namespace {

trace::Process ranked(int32_t pid, int32_t ppid, int32_t rank, std::string host) {
  trace::Process p;
  p.pid = pid;
  p.ppid = ppid;
  p.cmdline = "python train.py";
  p.start_ns = pid;
  p.rank = rank;
  p.local_rank = rank;
  p.world_size = rank >= 0 ? 2 : -1;
  p.host = std::move(host);
  return p;
}

trace::Event event(trace::EventKind kind, uint32_t thread, uint32_t name, int64_t start, int64_t end,
                   uint64_t arg = 0) {
  trace::Event e;
  e.kind = kind;
  e.thread = thread;
  e.name = name;
  e.start_ns = start;
  e.end_ns = end;
  e.arg = arg;
  return e;
}

// The chunk types of a file, in order, read from the chunk headers.
std::vector<uint32_t> chunk_types(const std::string& bytes) {
  std::vector<uint32_t> types;
  size_t off = 16;
  while (off + 24 <= bytes.size()) {
    uint32_t type, stored;
    std::memcpy(&type, bytes.data() + off, 4);
    std::memcpy(&stored, bytes.data() + off + 8, 4);
    types.push_back(type);
    off += 24 + stored;
  }
  return types;
}

// One rank's window: a main process with `steps` (number -> duration) and
// an allreduce per step (gloo's work nested in c10d's op), plus, for rank 0,
// a DataLoader worker (its child, same rank) running ops.
trace::Trace rank_trace(int32_t rank, const std::vector<std::pair<uint64_t, int64_t>>& steps) {
  trace::Trace t;
  t.header.host = "launcher-host";
  const int32_t pid = 1000 + rank;
  t.processes.push_back(ranked(pid, 1, rank, "node-" + std::to_string(rank)));
  t.threads.push_back({0, pid, "main", 0, 0});
  auto intern = [&](const char* s) {
    t.strings.emplace_back(s);
    return uint32_t(t.strings.size() - 1);
  };
  const uint32_t mm = intern("aten::mm"), c10d = intern("c10d::allreduce_"), gloo = intern("gloo:all_reduce");
  int64_t at = 0;
  for (const auto& [n, dur] : steps) {
    t.events.push_back(
        event(trace::EventKind::Step, 0, intern(("ProfilerStep#" + std::to_string(n)).c_str()), at, at + dur, n));
    t.events.push_back(event(trace::EventKind::Op, 0, mm, at + 10, at + 30));
    t.events.push_back(event(trace::EventKind::Op, 0, c10d, at + 40, at + 60));
    t.events.push_back(event(trace::EventKind::Op, 0, gloo, at + 45, at + 55));
    at += dur;
  }
  if (rank == 0) {
    t.processes.push_back(ranked(2000, pid, rank, "node-0"));
    t.threads.push_back({1, 2000, "worker", 0, 0});
    t.events.push_back(event(trace::EventKind::Step, 1, 0, 0, 100'000, steps.front().first));  // inherited at fork
    t.events.push_back(event(trace::EventKind::Op, 1, mm, 5, 8));
  }
  return t;
}

}  // namespace

TEST_CASE("collectives torch numbered are matched by process group and sequence number, not order", "[report][ranks]") {
  // One step; two allreduces each, rank 1 making them in the other order.
  // The first call's number is on the gloo op inside it, the second's on a
  // record_param_comms inside it.
  auto numbered = [](int32_t rank, int64_t first_seq, int64_t second_seq) {
    trace::Trace t = rank_trace(rank, {{1, 1000}});
    const uint32_t c10d = 2, comms = uint32_t(t.strings.size()), group = comms + 1;
    t.strings.emplace_back("record_param_comms");
    t.strings.emplace_back("0");
    t.events.push_back(event(trace::EventKind::Op, 0, c10d, 70, 90));
    t.events.push_back(event(trace::EventKind::Op, 0, comms, 72, 88));
    for (auto [start, seq] : {std::pair<int64_t, int64_t>{45, first_seq}, {72, second_seq}}) {
      trace::CollectiveInfo c;
      c.thread = 0;
      c.start_ns = start;
      c.process_group = group;
      c.seq = seq;
      t.collectives.push_back(c);
    }
    return t;
  };
  trace::Trace r0 = numbered(0, 7, 8), r1 = numbered(1, 8, 7);
  report::Report r = report::compute_report({{"r0.bin", &r0}, {"r1.bin", &r1}}, {});
  const std::vector<report::ArrivalRow>& a = r.ranks.arrivals;
  REQUIRE(a.size() == 2);
  CHECK(a[0].seq == 7);
  CHECK(a[0].process_group == "0");
  CHECK(a[0].arrivals == std::vector<std::pair<int32_t, int64_t>>{{0, 0}, {1, 30}});  // rank 1's second call
  CHECK(a[0].last_rank == 1);
  CHECK(a[1].seq == 8);
  CHECK(a[1].arrivals == std::vector<std::pair<int32_t, int64_t>>{{0, 30}, {1, 0}});
  CHECK(a[1].last_rank == 0);
  CHECK(a[1].index == 1);
  CHECK_THAT(report::render_json(r, 0), Catch::Contains("\"process_group\": \"0\", \"seq\": 7"));
  CHECK_THAT(report::render_table(r, 0), Catch::Contains("0:8"));

  SECTION("a step with a call torch did not number is matched by order") {
    r1.collectives.pop_back();
    report::Report w = report::compute_report({{"r0.bin", &r0}, {"r1.bin", &r1}}, {});
    REQUIRE(w.ranks.arrivals.size() == 2);
    CHECK(w.ranks.arrivals[0].seq == -1);
    CHECK(w.ranks.arrivals[0].spread_ns == 0);  // each rank's first call
  }
}

TEST_CASE("collectives round-trip in a chunk ahead of the events of their ops", "[format][ranks]") {
  TempDir dir;
  const std::string path = dir.file("c.bin");
  auto w = testing::open_writer(path, testing::sample_header());
  REQUIRE(w);
  w->add_process(ranked(10, 1, 3, "node-3"));
  const uint32_t th = w->add_thread({0, 10, "main", 0, 0});
  const uint32_t op = w->intern("record_param_comms");
  w->add_event(event(trace::EventKind::Op, th, op, 100, 200));
  trace::CollectiveInfo c;
  c.thread = th;
  c.start_ns = 100;
  c.name = w->intern("allreduce");
  c.process_group = w->intern("0");
  c.process_group_desc = w->intern("default_pg");
  c.dtype = w->intern("Float");
  c.seq = 41;
  c.in_elements = int64_t(1) << 40;
  c.out_elements = 3;
  c.group_size = 8;
  c.rank = 3;
  w->add_collective(c);
  REQUIRE(w->finish().ok());
  auto t = format::read_trace(path, nullptr);
  INFO(t.error());
  REQUIRE(t);
  REQUIRE(t->collectives.size() == 1);
  CHECK(t->collectives[0] == c);
  CHECK(t->strings[t->collectives[0].process_group_desc] == "default_pg");
  const std::vector<uint32_t> types = chunk_types(testing::slurp(path));
  const auto collectives = std::find(types.begin(), types.end(), 14u),
             events = std::find(types.begin(), types.end(), 5u);
  REQUIRE(collectives != types.end());
  CHECK(collectives < events);  // a reader that streams events has them first

  SECTION("a record naming a thread the file lacks is refused by the writer") {
    auto bad = testing::open_writer(dir.file("d.bin"), testing::sample_header());
    REQUIRE(bad);
    trace::CollectiveInfo x;
    x.thread = 5;
    bad->add_collective(x);
    CHECK_FALSE(bad->finish().ok());
  }
}

TEST_CASE("process attributes round-trip in a chunk of their own", "[format][ranks]") {
  TempDir dir;
  const std::string path = dir.file("t.bin");
  auto w = testing::open_writer(path, testing::sample_header());
  REQUIRE(w);
  w->add_process(ranked(10, 1, 3, "node-3"));
  trace::Process plain;
  plain.pid = 11;
  plain.ppid = 10;
  w->add_process(plain);
  trace::Process host_only = ranked(12, 10, -1, "node-9");
  w->add_process(host_only);
  w->add_thread({0, 10, "main", 0, 0});
  REQUIRE(w->finish().ok());

  std::vector<std::string> warnings;
  auto t = format::read_trace(path, &warnings);
  INFO(t.error());
  REQUIRE(t);
  REQUIRE(t->processes.size() == 3);
  CHECK(t->processes[0].rank == 3);
  CHECK(t->processes[0].local_rank == 3);
  CHECK(t->processes[0].world_size == 2);
  CHECK(t->processes[0].host == "node-3");
  CHECK(t->processes[1].rank == -1);
  CHECK(t->processes[1].world_size == -1);
  CHECK(t->processes[1].host.empty());
  CHECK(t->processes[2].rank == -1);
  CHECK(t->processes[2].host == "node-9");
  const std::vector<uint32_t> types = chunk_types(testing::slurp(path));
  // Right after the processes it describes.
  auto at = std::find(types.begin(), types.end(), 10u);
  REQUIRE(at != types.end());
  REQUIRE(at != types.begin());
  CHECK(*(at - 1) == 3u);
  CHECK(std::count(types.begin(), types.end(), 10u) == 1);
}

TEST_CASE("a file without process attributes reads as before: no ranks", "[format][ranks]") {
  TempDir dir;
  const std::string path = dir.file("t.bin");
  auto w = testing::open_writer(path, testing::sample_header());
  REQUIRE(w);
  trace::Process p;
  p.pid = 7;
  w->add_process(p);
  REQUIRE(w->finish().ok());
  const std::vector<uint32_t> types = chunk_types(testing::slurp(path));
  CHECK(std::count(types.begin(), types.end(), 10u) == 0);
  auto t = format::read_trace(path, nullptr);
  REQUIRE(t);
  CHECK(t->processes[0].rank == -1);
}

TEST_CASE("a process attributes record naming a process not yet defined is damage", "[format][ranks]") {
  // HEADER (empty fields), then a type-10 chunk naming process 0 of 0.
  std::string file(reinterpret_cast<const char*>("\x89PTPROF\n"), 8);
  file += std::string("\x01\0\0\0\0\0\0\0", 8);
  auto chunk = [&](uint32_t type, const std::string& payload) {
    std::string h(24, '\0');
    const uint32_t size = uint32_t(payload.size());
    const uint32_t crc = format::detail::crc32c(payload.data(), payload.size());
    std::memcpy(h.data(), &type, 4);
    std::memcpy(h.data() + 8, &size, 4);
    std::memcpy(h.data() + 12, &size, 4);
    std::memcpy(h.data() + 16, &crc, 4);
    const uint32_t hcrc = format::detail::crc32c(h.data(), 20);
    std::memcpy(h.data() + 20, &hcrc, 4);
    file += h + payload;
  };
  std::string header;
  format::detail::put_bytes(header, "h");
  header += std::string("\0\0\0\0", 4);
  format::detail::put_bytes(header, "");
  format::detail::put_bytes(header, "");
  chunk(1, header);
  std::string attrs;
  format::detail::put_varint(attrs, 1);
  format::detail::put_varint(attrs, 0);
  format::detail::put_bytes(attrs, std::string("\x01\x01\x01\x00", 4));
  chunk(10, attrs);
  TempDir dir;
  const std::string path = dir.file("bad.bin");
  testing::spit(path, file);
  auto t = format::read_trace(path, nullptr);
  REQUIRE_FALSE(t);
  CHECK_THAT(t.error(), Catch::Contains("process attributes name process 0 of 0"));
}

TEST_CASE("collective op names", "[report][ranks]") {
  CHECK(report::is_collective("c10d::allreduce_"));
  CHECK(report::is_collective("gloo:all_reduce"));
  CHECK(report::is_collective("nccl:all_reduce"));
  CHECK(report::is_collective("record_param_comms"));
  CHECK_FALSE(report::is_collective("aten::add"));
  CHECK_FALSE(report::is_collective("DistributedDataParallel.forward"));
}

TEST_CASE("the report merges ranks: steps, collectives, stragglers", "[report][ranks]") {
  // Rank 1 is slow in step 2.
  trace::Trace r0 = rank_trace(0, {{1, 1000}, {2, 1000}});
  trace::Trace r1 = rank_trace(1, {{1, 1100}, {2, 1600}});
  report::Report r = report::compute_report({{"r0.bin", &r0}, {"r1.bin", &r1}}, {});
  const report::RankSummary& s = r.ranks;

  REQUIRE(s.processes.size() == 3);
  CHECK(s.processes[0].pid == 1000);  // node-0: rank 0, then its worker (same rank, higher pid)
  CHECK(s.processes[0].host == "node-0");
  CHECK(s.processes[1].pid == 2000);
  CHECK(s.processes[1].ppid == 1000);
  CHECK(s.processes[1].ops == 1);
  CHECK(s.processes[2].pid == 1001);
  CHECK(s.processes[2].host == "node-1");

  REQUIRE(s.ranks.size() == 2);
  const report::RankRow& a = s.ranks[0];
  CHECK(a.rank == 0);
  CHECK(a.pid == 1000);  // the main process, not the worker
  CHECK(a.host == "node-0");
  CHECK(a.processes == 2);
  CHECK(a.world_size == 2);
  CHECK(a.step_ns ==
        std::map<uint64_t, int64_t>{{1, 1000}, {2, 1000}});  // the worker's inherited step is not the rank's
  CHECK(a.ops == 2 * 3 + 1);
  CHECK(a.op_ns == 2 * (20 + 20) + 3);  // top-level ops only: gloo's work is inside c10d's op
  CHECK(a.collective_calls == 2);       // outermost collectives
  CHECK(a.collective_ns == 2 * 20);
  REQUIRE(a.collectives.size() == 2);
  CHECK(a.collectives[0].name == "c10d::allreduce_");
  CHECK(a.collectives[0].calls == 2);
  CHECK(a.collectives[0].total_ns == 40);
  CHECK(a.collectives[1].name == "gloo:all_reduce");
  CHECK(a.collectives[1].total_ns == 20);
  CHECK(s.ranks[1].rank == 1);
  CHECK(s.ranks[1].processes == 1);

  REQUIRE(s.stragglers.size() == 2);
  CHECK(s.stragglers[0].step == 1);
  CHECK(s.stragglers[0].slowest_rank == 1);
  CHECK(s.stragglers[0].median_ns == 1050);
  CHECK(s.stragglers[0].lag_ns == 50);
  CHECK(s.stragglers[1].slowest_rank == 1);
  CHECK(s.stragglers[1].slowest_ns == 1600);
  CHECK(s.stragglers[1].lag_ns == 300);

  const std::string table = report::render_table(r, 0);
  CHECK_THAT(table, Catch::Contains("Ranks (") && Catch::Contains("Stragglers (") && Catch::Contains("Processes ("));
  const std::string json = report::render_json(r, 0);
  CHECK_THAT(json, Catch::Contains("\"ranks\": [") && Catch::Contains("\"stragglers\": [") &&
                       Catch::Contains("\"slowest_rank\": 1, \"slowest_us\": 1.600, \"median_us\": 1.300"));
}

TEST_CASE("collectives are matched across ranks by their order in the step, on the wall clock", "[report][ranks]") {
  trace::Trace r0 = rank_trace(0, {{1, 1000}, {2, 1000}});
  trace::Trace r1 = rank_trace(1, {{1, 1000}, {2, 1000}});
  // Rank 1's monotonic clock reads 5000 behind rank 0's: the same wall
  // times, told by its realtime offset.
  r1.header.realtime_offset_ns = r0.header.realtime_offset_ns + 5000;
  for (trace::Event& e : r1.events) {
    e.start_ns -= 5000;
    e.end_ns -= 5000;
  }
  // In step 2 rank 1 reaches its allreduce 300 ns after rank 0.
  for (trace::Event& e : r1.events)
    if (e.kind == trace::EventKind::Op && e.start_ns >= 1000 - 5000 && r1.strings[e.name] != "aten::mm") {
      e.start_ns += 300;
      e.end_ns += 300;
    }
  report::Report r = report::compute_report({{"r0.bin", &r0}, {"r1.bin", &r1}}, {});
  const std::vector<report::ArrivalRow>& a = r.ranks.arrivals;
  REQUIRE(a.size() == 2);  // one outermost collective per step: c10d's op, not gloo's work inside it
  CHECK(a[0].step == 1);
  CHECK(a[0].index == 0);
  CHECK(a[0].name == "c10d::allreduce_");
  CHECK(a[0].spread_ns == 0);
  CHECK(a[0].last_rank == 0);  // a tie names the lowest rank
  CHECK(a[1].step == 2);
  CHECK(a[1].last_rank == 1);
  CHECK(a[1].spread_ns == 300);
  CHECK(a[1].arrivals == std::vector<std::pair<int32_t, int64_t>>{{0, 0}, {1, 300}});

  const std::string table = report::render_table(r, 0);
  CHECK_THAT(table, Catch::Contains("Collective arrivals (") &&
                        Catch::Contains("Last to arrive, of 2 collectives: rank 0: 1, rank 1: 1"));
  const std::string json = report::render_json(r, 0);
  CHECK_THAT(json, Catch::Contains("{\"step\": 2, \"index\": 0, \"name\": \"c10d::allreduce_\", \"ranks\": 2, "
                                   "\"names_agree\": true, \"last_rank\": 1, \"spread_us\": 0.300, "
                                   "\"process_group\": null, \"seq\": null, \"arrivals\": [{\"rank\": 0, "
                                   "\"after_us\": 0.000}, {\"rank\": 1, \"after_us\": 0.300}]}"));

  SECTION("a torch without c10d's ops: the process groups' work is matched") {
    for (trace::Trace* t : {&r0, &r1})
      std::erase_if(t->events, [&](const trace::Event& e) { return t->strings[e.name] == "c10d::allreduce_"; });
    report::Report w = report::compute_report({{"r0.bin", &r0}, {"r1.bin", &r1}}, {});
    REQUIRE(w.ranks.arrivals.size() == 2);
    CHECK(w.ranks.arrivals[1].name == "gloo:all_reduce");
    CHECK(w.ranks.arrivals[1].last_rank == 1);
    CHECK(w.ranks.arrivals[1].spread_ns == 300);
  }
  SECTION("ranks whose Nth calls differ: the row says the names differ") {
    for (trace::Event& e : r1.events)
      if (r1.strings[e.name] == "c10d::allreduce_" && e.start_ns >= 1000 - 5000) e.name = uint32_t(r1.strings.size());
    r1.strings.emplace_back("c10d::broadcast_");
    report::Report w = report::compute_report({{"r0.bin", &r0}, {"r1.bin", &r1}}, {});
    REQUIRE(w.ranks.arrivals.size() == 2);
    CHECK(w.ranks.arrivals[0].names_agree);
    CHECK_FALSE(w.ranks.arrivals[1].names_agree);
    CHECK_THAT(report::render_table(w, 0), Catch::Contains("c10d::allreduce_ (names differ)"));
    CHECK_THAT(report::render_json(w, 0), Catch::Contains("\"names_agree\": false"));
  }
  SECTION("step 0 is a step (--step NAME numbers from 0)") {
    trace::Trace z0 = rank_trace(0, {{0, 1000}, {1, 1000}}), z1 = rank_trace(1, {{0, 1000}, {1, 1000}});
    report::Report w = report::compute_report({{"r0.bin", &z0}, {"r1.bin", &z1}}, {});
    REQUIRE(w.ranks.arrivals.size() == 2);
    CHECK(w.ranks.arrivals[0].step == 0);
  }
  SECTION("a step only one rank recorded is not matched") {
    std::erase_if(r1.events, [](const trace::Event& e) { return e.kind == trace::EventKind::Step && e.arg == 2; });
    report::Report w = report::compute_report({{"r0.bin", &r0}, {"r1.bin", &r1}}, {});
    REQUIRE(w.ranks.arrivals.size() == 1);
    CHECK(w.ranks.arrivals[0].step == 1);
  }
}

TEST_CASE("a single process has no ranks section and no processes table", "[report][ranks]") {
  trace::Trace t;
  t.processes.push_back(ranked(5, 1, -1, ""));
  t.header.host = "h";
  t.threads.push_back({0, 5, "main", 0, 0});
  t.strings.emplace_back("aten::mm");
  t.events.push_back(event(trace::EventKind::Op, 0, 1, 0, 10));
  report::Report r = report::compute_report({{"t.bin", &t}}, {});
  REQUIRE(r.ranks.processes.size() == 1);
  CHECK(r.ranks.processes[0].host == "h");  // the file's host when the process has none
  CHECK(r.ranks.ranks.empty());
  CHECK(r.ranks.stragglers.empty());
  const std::string table = report::render_table(r, 0);
  CHECK_THAT(table, !Catch::Contains("Ranks (") && !Catch::Contains("Processes ("));
}

namespace {

// Writes `t` as a trace file (strings interned anew, in order).
void write_trace(const std::string& path, const trace::Trace& t) {
  auto w = testing::open_writer(path, testing::sample_header());
  REQUIRE(w);
  for (const auto& p : t.processes) w->add_process(p);
  for (const auto& th : t.threads) w->add_thread(th);
  std::vector<uint32_t> names;
  for (const auto& s : t.strings) names.push_back(w->intern(s));
  for (trace::Event e : t.events) {
    e.name = names[e.name];
    e.start_ns += 6'000'000'000;
    e.end_ns += 6'000'000'000;
    w->add_event(e);
  }
  REQUIRE(w->finish().ok());
}

// The rank HTA gives a file: the first line matching "rank":\s+(\d+)
// (hta/common/trace_file.py), else 0.
int hta_rank(const std::string& text) {
  const std::regex rank_re(R"re("rank":\s+(\d+))re");
  std::istringstream lines(text);
  std::string line;
  std::smatch m;
  while (std::getline(lines, line))
    if (std::regex_search(line, m, rank_re)) return std::stoi(m[1].str());
  return 0;
}

}  // namespace

TEST_CASE("the Chrome export of one rank has Kineto's distributedInfo, as HTA reads it", "[export][ranks]") {
  TempDir dir;
  write_trace(dir.file("r0.bin"), rank_trace(0, {{1, 1000}, {2, 1000}}));  // with its DataLoader worker
  write_trace(dir.file("r1.bin"), rank_trace(1, {{1, 1100}, {2, 1600}}));

  for (int rank : {0, 1}) {
    const std::string out = dir.file("r" + std::to_string(rank) + ".json");
    auto r = exporting::export_chrome({dir.file("r" + std::to_string(rank) + ".bin")}, out, {});
    INFO(r.error());
    REQUIRE(r);
    CHECK(r->warnings.empty());
    const std::string text = testing::slurp(out);
    CHECK_THAT(text, Catch::Contains("\n\"distributedInfo\": {\"backend\": \"gloo\", \"rank\": " +
                                     std::to_string(rank) + ", \"world_size\": 2},\n"));
    CHECK(hta_rank(text) == rank);
    testing::Json doc = testing::JsonParser(text).parse();
    const testing::Json& info = doc["distributedInfo"];
    CHECK(info["rank"].num == rank);
    CHECK(info["world_size"].num == 2);
    CHECK(info["backend"].str == "gloo");
  }

  // Both ranks in one file: no rank to give it, and a warning says so.
  auto both = exporting::export_chrome({dir.file("r0.bin"), dir.file("r1.bin")}, dir.file("both.json"), {});
  REQUIRE(both);
  CHECK(testing::slurp(dir.file("both.json")).find("distributedInfo") == std::string::npos);
  REQUIRE(both->warnings.size() == 1);
  CHECK_THAT(both->warnings[0], Catch::Contains("2 ranks") && Catch::Contains("HTA"));

  // A rank whose files hold no collective: no backend, the rest as before.
  trace::Trace quiet;
  quiet.processes.push_back(ranked(7, 1, 3, "node-3"));
  quiet.threads.push_back({0, 7, "main", 0, 0});
  quiet.strings.emplace_back("aten::mm");
  quiet.events.push_back(event(trace::EventKind::Op, 0, 1, 0, 10));
  write_trace(dir.file("quiet.bin"), quiet);
  REQUIRE(exporting::export_chrome({dir.file("quiet.bin")}, dir.file("quiet.json"), {}));
  CHECK_THAT(testing::slurp(dir.file("quiet.json")),
             Catch::Contains("\n\"distributedInfo\": {\"rank\": 3, \"world_size\": 2},\n"));

  // No rank at all: no distributedInfo (HTA reads it as rank 0).
  trace::Trace single = quiet;
  single.processes[0].rank = -1;
  single.processes[0].world_size = -1;
  write_trace(dir.file("single.bin"), single);
  REQUIRE(exporting::export_chrome({dir.file("single.bin")}, dir.file("single.json"), {}));
  CHECK(testing::slurp(dir.file("single.json")).find("distributedInfo") == std::string::npos);
}

// Roles (issue 23): what the agent told of a process (a DataLoader worker
// and its id, a compile worker) round-trips in PROCESS_ATTRIBUTES' appended
// fields, and the report names every process: main, DataLoader worker N,
// compile worker, rank N, child.
TEST_CASE("process roles round-trip and name the report's processes", "[format][ranks]") {
  TempDir dir;
  const std::string path = dir.file("t.bin");
  auto w = testing::open_writer(path, testing::sample_header());
  REQUIRE(w);
  trace::Process main = ranked(10, 1, -1, "node");
  trace::Process worker = ranked(11, 10, -1, "node");
  worker.role = uint32_t(wire::ProcessRole::DataLoaderWorker);
  worker.role_index = 1;
  trace::Process compile = ranked(12, 10, -1, "node");
  compile.role = uint32_t(wire::ProcessRole::CompileWorker);
  trace::Process rank = ranked(13, 10, 0, "node");
  trace::Process child = ranked(14, 10, -1, "node");
  trace::Process spawned = ranked(15, 10, -1, "node");  // a 'spawn' worker, told later
  for (const trace::Process& p : {main, worker, compile, rank, child, spawned}) w->add_process(p);
  w->add_thread({0, 10, "main", 0, 0});
  w->set_process_role(5, uint32_t(wire::ProcessRole::DataLoaderWorker), 3);
  w->set_process_role(0, 0, -1);  // unchanged: no second record
  REQUIRE(w->finish().ok());

  auto t = format::read_trace(path, nullptr);
  INFO(t.error());
  REQUIRE(t);
  REQUIRE(t->processes.size() == 6);
  CHECK(t->processes[0].role == 0);
  CHECK(t->processes[0].role_index == -1);
  CHECK(t->processes[1].role == uint32_t(wire::ProcessRole::DataLoaderWorker));
  CHECK(t->processes[1].role_index == 1);
  CHECK(t->processes[2].role == uint32_t(wire::ProcessRole::CompileWorker));

  report::Report r = report::compute_report({{"t.bin", &*t}}, {});
  std::map<int32_t, std::string> roles;
  for (const report::ProcessRow& p : r.ranks.processes) roles[p.pid] = p.role;
  CHECK(roles == std::map<int32_t, std::string>{{10, "main"},
                                                {11, "DataLoader worker 1"},
                                                {12, "compile worker"},
                                                {13, "rank 0"},
                                                {14, "child"},
                                                {15, "DataLoader worker 3"}});
  const std::string text = report::render_ranks_table(r.ranks);
  CHECK(text.find("DataLoader worker 1") != std::string::npos);
}

// An mp.spawn rank learns its rank after its window's file was opened: the
// writer records it as another attributes record and finishes under the
// name that has it.
TEST_CASE("a rank told after the process was added round-trips, under the renamed file", "[format][ranks]") {
  TempDir dir;
  const std::string opened = dir.file("node.10.w000.bin"), renamed = dir.file("node.r1.10.w000.bin");
  auto w = testing::open_writer(opened, testing::sample_header());
  REQUIRE(w);
  w->add_process(ranked(10, 1, -1, "node"));
  w->add_thread({0, 10, "main", 0, 0});
  w->set_process_distributed(0, 1, -1, 2);
  w->rename_to(renamed);
  REQUIRE(w->finish().ok());
  CHECK(w->path() == renamed);
  CHECK(!std::filesystem::exists(opened));
  CHECK(!std::filesystem::exists(opened + ".tmp"));

  auto t = format::read_trace(renamed, nullptr);
  INFO(t.error());
  REQUIRE(t);
  REQUIRE(t->processes.size() == 1);
  CHECK(t->processes[0].rank == 1);
  CHECK(t->processes[0].local_rank == -1);
  CHECK(t->processes[0].world_size == 2);
  CHECK(t->processes[0].host == "node");
}
