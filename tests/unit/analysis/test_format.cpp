// Trace file round trips: every field, many threads and processes, string
// ids, streaming across chunks, and the size and speed targets.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "format/crc32c.hpp"
#include "test_format_fixtures.hpp"

using namespace ptprof;
using ptprof::testing::TempDir;

namespace {

trace::Event make_event(uint32_t thread, uint32_t name, int64_t start, int64_t end) {
  trace::Event e;
  e.thread = thread;
  e.name = name;
  e.start_ns = start;
  e.end_ns = end;
  return e;
}

void require_same_event(const trace::Event& a, const trace::Event& b) {
  REQUIRE(a.start_ns == b.start_ns);
  REQUIRE(a.end_ns == b.end_ns);
  REQUIRE(a.name == b.name);
  REQUIRE(a.thread == b.thread);
  REQUIRE(a.kind == b.kind);
  REQUIRE(a.scope == b.scope);
  REQUIRE(a.flags == b.flags);
  REQUIRE(a.shapes == b.shapes);
  REQUIRE(a.seq_nr == b.seq_nr);
  REQUIRE(a.fwd_thread_id == b.fwd_thread_id);
  REQUIRE(a.arg == b.arg);
}

}  // namespace

TEST_CASE("crc32c matches the documented check value", "[format]") {
  REQUIRE(format::detail::crc32c("123456789", 9) == 0xE3069283u);
  REQUIRE(format::detail::crc32c("", 0) == 0u);
}

TEST_CASE("round trip keeps every field", "[format]") {
  TempDir dir;
  const std::string path = dir.file("t.bin");
  auto w = testing::open_writer(path, testing::sample_header());
  REQUIRE(w);
  REQUIRE(w->intern("") == 0);
  uint32_t add = w->intern("aten::add");
  uint32_t mm = w->intern("aten::mm");
  REQUIRE(w->intern("aten::add") == add);  // interning is idempotent
  REQUIRE(add != mm);
  uint32_t shapes = w->intern("[[4, 3, 16, 16], [8, 3, 3, 3], [8], [], []]");
  uint32_t p0 = w->add_process({100, 1, "python train.py", 42});
  uint32_t p1 = w->add_process({-5, 100, std::string("odd\0cmd", 7), -7});
  uint32_t t0 = w->add_thread({p0, 100, "main", 999, 0});  // events is ignored
  uint32_t t1 = w->add_thread({p1, 2'000'000'000, "", 0, 0});
  REQUIRE(p1 == 1);
  REQUIRE(t1 == 1);

  std::vector<trace::Event> events;
  trace::Event e = make_event(t0, add, 1'000, 2'500);
  e.kind = trace::EventKind::Op;
  e.scope = 1;
  e.flags = trace::kTruncated | trace::kAsync;
  e.shapes = shapes;
  e.seq_nr = 17;
  e.fwd_thread_id = 123456789012345ull;
  e.arg = 0;
  events.push_back(e);
  events.push_back(make_event(t1, mm, -50, -10));  // negative times survive
  trace::Event step = make_event(t0, w->intern("ProfilerStep#7"), 500, 9'000);
  step.kind = trace::EventKind::Step;
  step.arg = 7;
  events.push_back(step);
  trace::Event mark = make_event(t1, add, 3'000, 3'000);
  mark.kind = trace::EventKind::Mark;
  mark.seq_nr = INT64_MIN;  // extreme deltas survive
  events.push_back(mark);
  // The extreme times a reader accepts (±2^61 ns; beyond is damage, see
  // test_report_overflow.cpp); end < start survives.
  const int64_t extreme = int64_t(1) << 61;
  trace::Event weird = make_event(t1, mm, extreme, -extreme);
  weird.seq_nr = INT64_MAX;
  weird.arg = UINT64_MAX;
  weird.scope = 255;
  weird.flags = 0xffff;
  events.push_back(weird);
  uint32_t late = w->intern("late string");  // strings may arrive after events
  events.push_back(make_event(t0, late, 10'000, 10'001));
  for (const auto& ev : events) w->add_event(ev);
  w->set_thread_dropped(t1, 12345);
  w->set_window_end(9'500'000'000);
  REQUIRE(w->events_written() == events.size());
  REQUIRE(w->finish().ok());
  REQUIRE_FALSE(std::filesystem::exists(path + ".tmp"));
  REQUIRE(w->bytes_written() == std::filesystem::file_size(path));

  std::vector<std::string> warnings;
  auto t = format::read_trace(path, &warnings);
  INFO(t.error());
  REQUIRE(t);
  REQUIRE(warnings.empty());
  auto h = testing::sample_header();
  CHECK(t->header.version == format::format_version());
  CHECK(t->header.host == h.host);
  CHECK(t->header.realtime_offset_ns == h.realtime_offset_ns);
  CHECK(t->header.window == h.window);
  CHECK(t->header.window_start_ns == h.window_start_ns);
  CHECK(t->header.window_end_ns == 9'500'000'000);
  CHECK(t->header.schedule == h.schedule);
  CHECK(t->header.ptprof_version == h.ptprof_version);
  REQUIRE(t->strings.size() == 6);
  CHECK(t->strings[0].empty());
  CHECK(t->strings[add] == "aten::add");
  CHECK(t->strings[late] == "late string");
  REQUIRE(t->processes.size() == 2);
  CHECK(t->processes[1].pid == -5);
  CHECK(t->processes[1].ppid == 100);
  CHECK(t->processes[1].cmdline == std::string("odd\0cmd", 7));
  CHECK(t->processes[1].start_ns == -7);
  REQUIRE(t->threads.size() == 2);
  CHECK(t->threads[0].process == 0);
  CHECK(t->threads[0].name == "main");
  CHECK(t->threads[0].events == 3);
  CHECK(t->threads[0].dropped == 0);
  CHECK(t->threads[1].process == 1);
  CHECK(t->threads[1].tid == 2'000'000'000);
  CHECK(t->threads[1].events == 3);
  CHECK(t->threads[1].dropped == 12345);
  REQUIRE(t->events.size() == events.size());
  for (size_t i = 0; i < events.size(); ++i) require_same_event(t->events[i], events[i]);

  auto s = format::read_trace_summary(path, &warnings);
  REQUIRE(s);
  CHECK(s->events.empty());
  CHECK(s->threads[1].events == 3);
  CHECK(s->threads[1].dropped == 12345);
  CHECK(s->header.window_end_ns == 9'500'000'000);
}

TEST_CASE("an empty trace round-trips", "[format]") {
  TempDir dir;
  auto w = testing::open_writer(dir.file("e.bin"), {});
  REQUIRE(w);
  REQUIRE(w->finish().ok());
  std::vector<std::string> warnings;
  auto t = format::read_trace(dir.file("e.bin"), &warnings);
  REQUIRE(t);
  CHECK(t->events.empty());
  CHECK(t->threads.empty());
  CHECK(t->strings.size() == 1);
  CHECK(warnings.empty());
}

TEST_CASE("many processes and threads across many chunks", "[format]") {
  TempDir dir;
  const std::string path = dir.file("m.bin");
  auto w = testing::open_writer(path, {});
  REQUIRE(w);
  std::vector<trace::Event> expect;
  std::vector<uint32_t> threads;
  // Threads and processes appear while events stream, as in a real window
  // where DataLoader workers start late.
  for (int i = 0; i < 300'000; ++i) {
    if (i % 1000 == 0) {
      uint32_t p = w->add_process({i, 1, "proc " + std::to_string(i), i});
      threads.push_back(w->add_thread({p, i, "t" + std::to_string(i), 0, 0}));
      threads.push_back(w->add_thread({p, i + 1, "u" + std::to_string(i), 0, 0}));
    }
    uint32_t name = w->intern("name " + std::to_string(i % 5000));
    trace::Event e = make_event(threads[size_t(i) % threads.size()], name, i * 10, i * 10 + i % 7);
    e.seq_nr = i % 3 == 0 ? -1 : i;
    expect.push_back(e);
    w->add_event(e);
  }
  for (uint32_t t : threads) w->set_thread_dropped(t, t);
  REQUIRE(w->finish().ok());
  auto t = format::read_trace(path, nullptr);
  INFO(t.error());
  REQUIRE(t);
  REQUIRE(t->processes.size() == 300);
  REQUIRE(t->threads.size() == 600);
  REQUIRE(t->strings.size() == 5001);
  REQUIRE(t->events.size() == expect.size());
  for (size_t i = 0; i < expect.size(); ++i) require_same_event(t->events[i], expect[i]);
  uint64_t total = 0;
  for (size_t i = 0; i < t->threads.size(); ++i) {
    total += t->threads[i].events;
    CHECK(t->threads[i].dropped == i);
  }
  CHECK(total == expect.size());
}

// The writer checks its columns' room once per event, for ten-byte varints
// in every column: events of the widest values, between narrow ones, past a
// chunk's end, must come back as they went in.
TEST_CASE("events of ten-byte values round-trip as the columns grow", "[format]") {
  TempDir dir;
  const std::string path = dir.file("wide.bin");
  auto w = testing::open_writer(path, {});
  REQUIRE(w);
  const uint32_t p = w->add_process({1, 0, "p", 0});
  const uint32_t th = w->add_thread({p, 1, "t", 0, 0});
  const uint32_t name = w->intern("wide");
  std::vector<trace::Event> expect;
  constexpr int64_t kFar = int64_t(1) << 60;  // within the format's time range, a nine-byte delta
  for (int i = 0; i < 70'000; ++i) {          // past kEventsPerChunk (64 Ki)
    const bool wide = i % 3 != 0;
    trace::Event e = make_event(th, name, wide ? (i % 2 ? kFar : -kFar) : i, wide ? kFar : i + 1);
    if (wide) {
      e.seq_nr = i % 2 ? INT64_MAX : INT64_MIN;
      e.fwd_thread_id = UINT64_MAX - uint64_t(i);
      e.arg = UINT64_MAX;
      e.flags = 0xffff;
      e.scope = 0xff;
    }
    expect.push_back(e);
    w->add_event(e);
  }
  REQUIRE(w->finish().ok());
  auto t = format::read_trace(path, nullptr);
  INFO(t.error());
  REQUIRE(t);
  REQUIRE(t->events.size() == expect.size());
  for (size_t i = 0; i < expect.size(); ++i) require_same_event(t->events[i], expect[i]);
}

TEST_CASE("writer misuse is reported by finish and leaves no file", "[format]") {
  TempDir dir;
  auto w = testing::open_writer(dir.file("bad.bin"), {});
  REQUIRE(w);
  w->add_event(make_event(0, 0, 0, 1));  // no thread 0
  const ptprof::Status finished = w->finish();
  CHECK_FALSE(finished.ok());
  CHECK(finished.message().find("thread") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.file("bad.bin")));
  CHECK_FALSE(std::filesystem::exists(dir.file("bad.bin.tmp")));

  auto w2 = testing::open_writer(dir.file("bad2.bin"), {});
  uint32_t p = w2->add_process({1, 0, "", 0});
  uint32_t th = w2->add_thread({p, 1, "", 0, 0});
  w2->add_event(make_event(th, 99, 0, 1));  // no string 99
  const ptprof::Status finished2 = w2->finish();
  CHECK_FALSE(finished2.ok());
  CHECK(finished2.message().find("string") != std::string::npos);

  auto none = format::TraceWriter::create("/nonexistent-dir/x.bin", {});
  CHECK_FALSE(none.ok());
  CHECK(none.error().find("/nonexistent-dir/x.bin.tmp") != std::string::npos);
}

TEST_CASE("a writer never finished leaves a readable .tmp", "[format]") {
  TempDir dir;
  {
    auto w = testing::open_writer(dir.file("c.bin"), {});
    uint32_t p = w->add_process({1, 0, "", 0});
    uint32_t th = w->add_thread({p, 1, "", 0, 0});
    for (int i = 0; i < 70'000; ++i) w->add_event(make_event(th, 0, i, i + 1));
  }  // dropped without finish(): a launcher crash
  CHECK_FALSE(std::filesystem::exists(dir.file("c.bin")));
  std::vector<std::string> warnings;
  auto t = format::read_trace(dir.file("c.bin.tmp"), &warnings);
  INFO(t.error());
  REQUIRE(t);
  CHECK(t->events.size() == 64 * 1024);  // the one full chunk that was flushed
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("truncated at byte") != std::string::npos);
  CHECK(warnings[0].find("65536 events read") != std::string::npos);
}

TEST_CASE("1M realistic events: a few bytes each, read quickly", "[format][perf]") {
  TempDir dir;
  const std::string path = dir.file("big.bin");
  const uint64_t n = 1'000'000;
  auto t0 = std::chrono::steady_clock::now();
  REQUIRE(testing::write_realistic(path, n, 4).ok());
  auto t1 = std::chrono::steady_clock::now();
  auto t = format::read_trace(path, nullptr);
  auto t2 = std::chrono::steady_clock::now();
  INFO(t.error());
  REQUIRE(t);
  REQUIRE(t->events.size() == n);
  double bytes_per_event = double(std::filesystem::file_size(path)) / double(n);
  double write_s = std::chrono::duration<double>(t1 - t0).count();
  double read_s = std::chrono::duration<double>(t2 - t1).count();
  WARN("1M realistic events: " << bytes_per_event << " bytes/event, write " << write_s << " s, read " << read_s
                               << " s");
  CHECK(bytes_per_event < 6.0);
  // 10M events must read in a few seconds; leave room for sanitizer and
  // debug builds.
  CHECK(read_s < 3.0);
  uint64_t dropped = 0;
  for (const auto& th : t->threads) dropped += th.dropped;
  CHECK(dropped == 0 + 7 + 14 + 21);
}

TEST_CASE("the file starts as docs/format.md says", "[format]") {
  TempDir dir;
  auto w = testing::open_writer(dir.file("d.bin"), testing::sample_header());
  REQUIRE(w->finish().ok());
  std::string b = testing::slurp(dir.file("d.bin"));
  REQUIRE(b.size() > 16 + 24);
  CHECK(b.substr(0, 8) == std::string("\x89PTPROF\n"));
  auto u32 = [&](size_t at) {
    return uint32_t(uint8_t(b[at])) | uint32_t(uint8_t(b[at + 1])) << 8 | uint32_t(uint8_t(b[at + 2])) << 16 |
           uint32_t(uint8_t(b[at + 3])) << 24;
  };
  CHECK(u32(8) == 1);   // version
  CHECK(u32(12) == 0);  // reserved
  CHECK(u32(16) == 1);  // first chunk: header
  uint32_t stored = u32(24);
  CHECK(u32(36) == format::detail::crc32c(b.data() + 16, 20));
  CHECK(u32(32) == format::detail::crc32c(b.data() + 40, stored));
  // Header payload (uncompressed: it is small): host as a length-prefixed string.
  CHECK(u32(20) == 0);
  CHECK(uint8_t(b[40]) == 7);
  CHECK(b.substr(41, 7) == "node-17");
}
