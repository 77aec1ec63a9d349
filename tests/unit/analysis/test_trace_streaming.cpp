// read_trace_streaming: the events of read_trace, chunk by chunk, none kept.
#include <catch2/catch.hpp>

#include "test_format_fixtures.hpp"

using namespace ptprof;
using namespace ptprof::testing;

TEST_CASE("streaming read delivers every event in file order, chunk by chunk", "[format][stream]") {
  TempDir dir;
  std::string err;
  std::string path = dir.file("big.bin");
  REQUIRE(write_realistic(path, 200'000, 2));
  auto whole = format::read_trace(path, nullptr);
  REQUIRE(whole);

  size_t chunks = 0, seen = 0;
  bool same = true;
  format::EventChunkSink sink = [&](const trace::Trace& meta, const std::vector<trace::Event>& events) {
    ++chunks;
    CHECK(meta.strings.size() > 1);  // metadata arrives ahead of the events
    for (const trace::Event& e : events) {
      const trace::Event& w = whole->events[seen++];
      same = same && e.start_ns == w.start_ns && e.end_ns == w.end_ns && e.name == w.name && e.thread == w.thread &&
             e.shapes == w.shapes && e.seq_nr == w.seq_nr;
    }
  };
  auto t = format::read_trace_streaming(path, sink, nullptr);
  REQUIRE(t);
  CHECK(same);
  CHECK(seen == whole->events.size());
  CHECK(chunks >= 2);
  CHECK(t->events.empty());
  REQUIRE(t->threads.size() == whole->threads.size());
  for (size_t i = 0; i < t->threads.size(); ++i) {
    CHECK(t->threads[i].events == whole->threads[i].events);
    CHECK(t->threads[i].dropped == whole->threads[i].dropped);
  }

  // A file cut short: the events before the cut, and the same warning.
  std::string bytes = slurp(path);
  spit(dir.file("cut.bin"), bytes.substr(0, bytes.size() * 2 / 3));
  std::vector<std::string> warnings;
  seen = 0;
  format::EventChunkSink count = [&](const trace::Trace&, const std::vector<trace::Event>& events) {
    seen += events.size();
  };
  auto cut = format::read_trace_streaming(dir.file("cut.bin"), count, &warnings);
  REQUIRE(cut);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find(std::to_string(seen) + " events read") != std::string::npos);
  CHECK(seen > 0);
  CHECK(seen < whole->events.size());
}

TEST_CASE("a streaming read stops after the chunk its consumer declines", "[format][stream]") {
  TempDir dir;
  std::string path = dir.file("big.bin");
  REQUIRE(write_realistic(path, 200'000, 2));
  size_t chunks = 0, seen = 0;
  format::EventChunkFilter first_only = [&](const trace::Trace&, const std::vector<trace::Event>& events) {
    ++chunks;
    seen += events.size();
    return false;
  };
  std::vector<std::string> warnings;
  auto t = format::read_trace_streaming_while(path, first_only, &warnings);
  REQUIRE(t);
  CHECK(chunks == 1);
  CHECK(seen > 0);
  CHECK(seen < 200'000);
  CHECK(t->strings.size() > 1);  // the metadata read so far
  CHECK(warnings.empty());

  chunks = seen = 0;
  format::EventChunkFilter all = [&](const trace::Trace&, const std::vector<trace::Event>& events) {
    ++chunks;
    seen += events.size();
    return true;
  };
  REQUIRE(format::read_trace_streaming_while(path, all, nullptr));
  CHECK(seen == 200'000);
  CHECK(chunks >= 2);
}
