// Trace files in a directory others can write to (issue #13): the writer
// never writes through a planted symlink, never replaces a file under the
// name it renames to, and says where the trace went; a truncated .tmp left by
// a killed launcher reads up to its last flushed chunk.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "test_format_fixtures.hpp"

using namespace ptprof;
using ptprof::testing::slurp;
using ptprof::testing::spit;
using ptprof::testing::TempDir;
namespace fs = std::filesystem;

namespace {

void write_one_event(format::TraceWriter& w) {
  uint32_t p = w.add_process({4242, 1, "prog", 0});
  uint32_t t = w.add_thread({p, 4243, "main", 0, 0});
  trace::Event e;
  e.thread = t;
  e.name = w.intern("aten::add");
  e.start_ns = 10;
  e.end_ns = 20;
  w.add_event(e);
}

// The regular *.bin files of `dir` but `except`: where the writer put a trace.
std::vector<std::string> regular_traces(const TempDir& dir, const std::string& except = "") {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir.path()))
    if (e.path().extension() == ".bin" && !e.is_symlink() && e.is_regular_file() && e.path().string() != except)
      out.push_back(e.path().string());
  return out;
}

}  // namespace

TEST_CASE("trace writer: a symlink planted at the .tmp name is not written through", "[format][safety]") {
  TempDir dir;
  const std::string victim = dir.file("victim");
  spit(victim, "precious");
  const std::string path = dir.file("h.1.r.w000.bin");
  fs::create_symlink(victim, path + ".tmp");

  auto created = format::TraceWriter::create(path, testing::sample_header());
  if (created) {
    write_one_event(**created);
    Status s = (*created)->finish();
    INFO(s.message());
    CHECK(s.ok());
    // Written under another name.
    auto written = regular_traces(dir);
    REQUIRE(written.size() == 1);
    CHECK(written[0] != path);
    std::vector<std::string> warnings;
    auto t = format::read_trace(written[0], &warnings);
    REQUIRE(t);
    CHECK(t->events.size() == 1);
  } else {
    CHECK_THAT(created.error(), Catch::Contains(path + ".tmp"));
  }
  CHECK(slurp(victim) == "precious");
  CHECK(fs::is_symlink(path + ".tmp"));
}

TEST_CASE("trace writer: finish() never replaces a file or a symlink at the final name", "[format][safety]") {
  TempDir dir;
  const std::string victim = dir.file("victim");
  spit(victim, "precious");
  for (bool as_symlink : {true, false}) {
    INFO("symlink: " << as_symlink);
    const std::string path = dir.file(as_symlink ? "h.1.r.w000.bin" : "h.1.r.w001.bin");
    auto w = testing::open_writer(path, testing::sample_header());
    // Another run's file (or an attacker's symlink) appears meanwhile.
    if (as_symlink)
      fs::create_symlink(victim, path);
    else
      spit(path, "another run's trace");
    write_one_event(*w);
    Status s = w->finish();
    INFO(s.message());
    CHECK(s.ok());
    if (as_symlink)
      CHECK(fs::is_symlink(path));
    else
      CHECK(slurp(path) == "another run's trace");
    CHECK(!fs::exists(path + ".tmp"));
  }
  // Both traces were written, under names of their own.
  CHECK(regular_traces(dir, dir.file("h.1.r.w001.bin")).size() == 2);
  CHECK(slurp(victim) == "precious");
}

TEST_CASE("trace writer: files are created with mode 0644 less the umask", "[format][safety]") {
  TempDir dir;
  mode_t old = ::umask(022);
  auto w = testing::open_writer(dir.file("a.bin"), testing::sample_header());
  ::umask(old);
  write_one_event(*w);
  REQUIRE(w->finish().ok());
  struct stat st {};
  REQUIRE(::stat(dir.file("a.bin").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0644);
}

TEST_CASE("trace writer: flush() makes the events so far readable from the .tmp", "[format][safety]") {
  TempDir dir;
  const std::string path = dir.file("h.1.r.w000.bin");
  auto w = testing::open_writer(path, testing::sample_header());
  write_one_event(*w);
  w->flush();
  // What a launcher killed now leaves behind: read it as it is.
  std::vector<std::string> warnings;
  auto t = format::read_trace(path + ".tmp", &warnings);
  INFO(t.error());
  REQUIRE(t);
  CHECK(t->events.size() == 1);
  CHECK(!warnings.empty());
}
