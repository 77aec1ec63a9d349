// Readers never trust a file: every truncation point and every flipped byte
// of a small trace ends in an error or the valid part with a warning, never a
// crash (run this binary under -fsanitize=address,undefined to be sure).
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "format/format_layout.hpp"
#include "test_format_fixtures.hpp"

using namespace ptprof;
using ptprof::testing::TempDir;

namespace {

// A small trace with several chunks of each kind: header, strings, processes,
// threads, two event chunks, footer.
std::string small_trace(const TempDir& dir) {
  const std::string path = dir.file("small.bin");
  REQUIRE(testing::write_realistic(path, 70'000, 3).ok());
  return testing::slurp(path);
}

struct Outcome {
  bool ok = false;
  std::string error;
  std::vector<std::string> warnings;
  size_t events = 0;
};

Outcome read_bytes(const TempDir& dir, const std::string& bytes, bool summary = false) {
  const std::string path = dir.file("damaged.bin");
  testing::spit(path, bytes);
  Outcome o;
  auto t = summary ? format::read_trace_summary(path, &o.warnings) : format::read_trace(path, &o.warnings);
  o.ok = t.ok();
  o.error = t.error();
  if (t) o.events = t->events.size();
  return o;
}

// The lengths at which to cut a whole trace: every length where the reader's
// path can change (the preamble and first chunk headers, around every chunk's
// start, the last chunk and the footer whole) and a stride elsewhere, where a
// cut lands inside some chunk's compressed payload and every such cut is read
// alike. (Every one of the ~200K prefixes, each decompressing up to ~1 MB,
// took minutes under the sanitizers.)
std::vector<size_t> cut_lengths(const std::string& full) {
  using namespace format::detail;
  std::vector<size_t> starts;
  for (size_t at = kPreambleBytes; at + kChunkHeaderBytes <= full.size();) {
    starts.push_back(at);
    uint32_t stored = 0;
    std::memcpy(&stored, full.data() + at + 8, 4);
    at += kChunkHeaderBytes + stored;
  }
  REQUIRE(starts.size() >= 6);  // header, strings, processes, threads, events, footer
  std::vector<bool> cut(full.size(), false);
  auto dense = [&](size_t from, size_t to) {
    for (size_t n = from; n < std::min(to, full.size()); ++n) cut[n] = true;
  };
  dense(0, 1024);
  for (size_t start : starts) dense(start < 64 ? 0 : start - 64, start + kChunkHeaderBytes + 64);
  dense(starts.back() - 64, full.size());  // the footer, every byte of it
  for (size_t n = 0; n < full.size(); n += 389) cut[n] = true;
  std::vector<size_t> lengths;
  for (size_t n = 0; n < full.size(); ++n)
    if (cut[n]) lengths.push_back(n);
  return lengths;
}

}  // namespace

TEST_CASE("every truncation point gives an error or the valid part with a warning", "[format][damage]") {
  TempDir dir;
  const std::string full = small_trace(dir);
  REQUIRE(full.size() > 1000);
  size_t partial_reads = 0;
  const std::vector<size_t> lengths = cut_lengths(full);
  INFO(lengths.size() << " of " << full.size() << " prefixes");
  for (size_t len : lengths) {
    Outcome o = read_bytes(dir, full.substr(0, len));
    INFO("prefix length " << len << ": " << o.error);
    if (o.ok) {
      REQUIRE(o.warnings.size() == 1);
      REQUIRE(o.warnings[0].find("truncated at byte") != std::string::npos);
      REQUIRE(o.events <= 70'000);  // all of them when only the footer is cut
      ++partial_reads;
    } else {
      REQUIRE(o.error.rfind(dir.file("damaged.bin") + ": ", 0) == 0);
      REQUIRE(
          (o.error.find("truncated at byte") != std::string::npos || o.error.find("bad magic") != std::string::npos));
    }
  }
  CHECK(partial_reads > 0);
  Outcome whole = read_bytes(dir, full);
  CHECK(whole.ok);
  CHECK(whole.warnings.empty());
  CHECK(whole.events == 70'000);
}

TEST_CASE("every flipped byte gives an error or a valid read", "[format][damage]") {
  TempDir dir;
  // Small enough to flip every byte: one event chunk of a few hundred events.
  REQUIRE(testing::write_realistic(dir.file("tiny.bin"), 300, 2).ok());
  const std::string full = testing::slurp(dir.file("tiny.bin"));
  size_t errors = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    for (uint8_t mask : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xff)}) {
      std::string bytes = full;
      bytes[i] = char(uint8_t(bytes[i]) ^ mask);
      // A summary skips event payloads, so it may not notice a flip there;
      // it must still not crash.
      for (bool summary : {false, true}) {
        Outcome o = read_bytes(dir, bytes, summary);
        INFO("byte " << i << " mask " << int(mask) << ": " << o.error);
        if (!o.ok) REQUIRE(o.error.rfind(dir.file("damaged.bin") + ": ", 0) == 0);
        if (!o.ok && !summary) ++errors;
      }
    }
  }
  // Magic and version are checked by value and everything after the preamble
  // by checksums; only the reserved word (bytes 12-15) is ignored.
  CHECK(errors == (full.size() - 4) * 3);
}

TEST_CASE("checksum errors name the chunk's byte offset", "[format][damage]") {
  TempDir dir;
  std::string full = small_trace(dir);
  std::string bytes = full;
  bytes[16 + 24 + 2] ^= 0x10;  // inside the header chunk's payload
  Outcome o = read_bytes(dir, bytes);
  CHECK_FALSE(o.ok);
  CHECK(o.error == dir.file("damaged.bin") + ": chunk at byte 16: checksum mismatch");
  bytes = full;
  bytes[16 + 3] ^= 0x01;  // inside the header chunk's header
  o = read_bytes(dir, bytes);
  CHECK(o.error == dir.file("damaged.bin") + ": chunk at byte 16: header checksum mismatch");
}

TEST_CASE("bad magic, version and non-trace inputs are clear errors", "[format][damage]") {
  TempDir dir;
  std::string full = small_trace(dir);
  std::string bytes = full;
  bytes[1] = 'X';
  Outcome o = read_bytes(dir, bytes);
  CHECK_FALSE(o.ok);
  CHECK(o.error.find("not a ptprof trace file (bad magic)") != std::string::npos);

  bytes = full;
  bytes[8] = 2;
  o = read_bytes(dir, bytes);
  CHECK_FALSE(o.ok);
  CHECK(o.error.find("format version 2 is not supported") != std::string::npos);

  o = read_bytes(dir, "");
  CHECK_FALSE(o.ok);
  CHECK(o.error.find("bad magic") != std::string::npos);

  o = read_bytes(dir, "hello, this is a text file and not a trace at all\n");
  CHECK_FALSE(o.ok);
  CHECK(o.error.find("bad magic") != std::string::npos);

  auto missing = format::read_trace(dir.file("missing.bin"), nullptr);
  CHECK_FALSE(missing.ok());
  CHECK(missing.error().find("missing.bin: No such file or directory") != std::string::npos);
  auto directory = format::read_trace(dir.path().string(), nullptr);
  CHECK_FALSE(directory.ok());
  CHECK(directory.error().find("not a regular file") != std::string::npos);
}

TEST_CASE("a summary of a file without footer counts the events", "[format][damage]") {
  TempDir dir;
  std::string full = small_trace(dir);
  // Cut the footer chunk off: the file ends cleanly after the last event chunk.
  Outcome all = read_bytes(dir, full);
  REQUIRE(all.ok);
  size_t cut = full.size();
  // The footer is the last chunk; find it by trying cuts from the end.
  for (size_t back = 25; back < 200; ++back) {
    Outcome o = read_bytes(dir, full.substr(0, full.size() - back));
    if (o.ok && o.events == 70'000) {
      cut = full.size() - back;
      break;
    }
  }
  REQUIRE(cut < full.size());
  Outcome s = read_bytes(dir, full.substr(0, cut), true);
  REQUIRE(s.ok);
  CHECK(s.events == 0);
  REQUIRE(s.warnings.size() == 1);
  CHECK(s.warnings[0].find("70000 events read") != std::string::npos);
}

TEST_CASE("expand_trace_paths", "[format]") {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "out");
  std::filesystem::create_directories(dir.path() / "empty");
  testing::spit(dir.file("out/h.1.w001.bin"), "x");
  testing::spit(dir.file("out/h.1.w000.bin"), "x");
  testing::spit(dir.file("out/h.1.w002.bin.tmp"), "x");
  testing::spit(dir.file("out/notes.txt"), "x");
  testing::spit(dir.file("single.dat"), "x");
  auto expanded = format::expand_trace_paths({dir.file("single.dat"), dir.file("out")});
  REQUIRE(expanded.ok());
  const std::vector<std::string>& files = *expanded;
  REQUIRE(files.size() == 3);
  CHECK(files[0] == dir.file("single.dat"));
  CHECK(files[1] == dir.file("out/h.1.w000.bin"));
  CHECK(files[2] == dir.file("out/h.1.w001.bin"));

  CHECK(format::expand_trace_paths({dir.file("nope")}).error().find("nope: no such file or directory") !=
        std::string::npos);
  CHECK(format::expand_trace_paths({dir.file("empty")}).error().find("no trace files") != std::string::npos);
}
