// `ptprof export --chrome`: Kineto's schema, structure, escaping, gzip and
// size-bounded parts, on synthetic traces with known content.
#include <filesystem>
#include <set>

#include "ptprof/analysis/export.hpp"
#include "test_export_fixtures.hpp"

using namespace ptprof;
using namespace ptprof::testing;

namespace {

// The names as a JSON reader decodes them (the test parser maps \uXXXX to
// one byte, enough for the control characters used here).
std::map<std::string, int> expected_names(const LoopTrace& lt) {
  std::map<std::string, int> m;
  for (auto& [name, n] : lt.counts)
    if (name != kInvalidUtf8Name) m[name] += n;
  return m;
}

}  // namespace

TEST_CASE("Chrome export: Kineto's schema and every event", "[export][chrome]") {
  TempDir dir;
  LoopTrace lt = write_loop(dir, "loop.bin", 4, 20);
  auto r = exporting::export_chrome({lt.path}, dir.file("out.json"), {});
  REQUIRE(r);
  CHECK(r->events == lt.events);
  REQUIRE(r->files == std::vector<std::string>{dir.file("out.json")});
  Json doc = parse_json_file(dir.file("out.json"));
  auto names = check_chrome_document(doc);

  auto want = expected_names(lt);
  for (auto& [name, n] : want) CHECK(names[name] == n);
  std::string text = slurp(dir.file("out.json"));
  // Invalid UTF-8 becomes U+FFFD; no raw byte of it is left.
  CHECK(text.find("latin1 \\ufffdt\\ufffd") != std::string::npos);
  CHECK(text.find('\xe9') == std::string::npos);
  CHECK(text.find("bad\\u0001name\\ttab\\u007f") != std::string::npos);

  int ops = 0, scopes = 0, steps = 0, marks = 0;
  for (const Json& e : doc["traceEvents"].arr) {
    if (e["ph"].str == "M") continue;
    const Json& args = e["args"];
    CHECK(args["External id"].kind == Json::Number);
    if (e["ph"].str == "i") {
      ++marks;
      CHECK(e["cat"].str == "user_annotation");
      continue;
    }
    if (e["name"].str.rfind("aten::op_", 0) == 0) {
      ++ops;
      CHECK(e["cat"].str == "cpu_op");
      CHECK(args["Sequence number"].kind == Json::Number);
      CHECK(args["Fwd thread id"].kind == Json::Number);
      const Json& dims = args["Input Dims"];
      REQUIRE(dims.kind == Json::Array);
      for (const Json& d : dims.arr) CHECK(d.kind == Json::Array);
      if (args.obj.count("Input Dims truncated")) {
        REQUIRE(dims.arr.size() == 1);
        CHECK(dims.arr[0].arr.size() == 2);
      } else {
        REQUIRE(dims.arr.size() == 3);
        CHECK(dims.arr[0].arr[0].num == 4);
        CHECK(dims.arr[2].arr.empty());
      }
    } else if (e["name"].str == "cut_short") {
      CHECK(args["Truncated"].num == 1);
    } else if (e["name"].str == "forward") {
      ++scopes;
      CHECK(e["cat"].str == "user_annotation");
    } else if (e["name"].str.rfind("ProfilerStep#", 0) == 0) {
      ++steps;
      CHECK(e["cat"].str == "user_annotation");
    }
  }
  CHECK(ops == 80);
  CHECK(scopes == 4);
  CHECK(steps == 4);
  CHECK(marks == 1);

  // Metadata: process and thread names, a name for the unnamed thread.
  std::map<std::string, std::string> meta;
  for (const Json& e : doc["traceEvents"].arr)
    if (e["ph"].str == "M" && e["args"].obj.count("name"))
      meta[e["name"].str + "/" + std::to_string(int(e["tid"].num))] = e["args"]["name"].str;
  CHECK(meta["process_name/0"] == "python3");
  CHECK(meta["thread_name/4242"] == "python3");
  CHECK(meta["thread_name/4250"] == "thread 4250");
}

TEST_CASE("Chrome export: gzip by name holds the same JSON", "[export][chrome]") {
  TempDir dir;
  LoopTrace lt = write_loop(dir, "loop.bin", 3, 10);
  REQUIRE(exporting::export_chrome({lt.path}, dir.file("a.json"), {}));
  REQUIRE(exporting::export_chrome({lt.path}, dir.file("a.json.gz"), {}));
  std::string gz = slurp(dir.file("a.json.gz"));
  REQUIRE(gz.size() > 2);
  CHECK(uint8_t(gz[0]) == 0x1f);
  CHECK(uint8_t(gz[1]) == 0x8b);
  Run unzip = run_ptprof("--version >/dev/null; gzip -dc " + dir.file("a.json.gz"));
  REQUIRE(unzip.status == 0);
  // The same but for Kineto's traceName, each file's own path.
  auto without_name = [](std::string json, const std::string& path) {
    const std::string line = "\"traceName\": \"" + path + "\",\n";
    const size_t at = json.find(line);
    return at == std::string::npos ? json : json.erase(at, line.size());
  };
  CHECK(without_name(unzip.out, dir.file("a.json.gz")) == without_name(slurp(dir.file("a.json")), dir.file("a.json")));
  CHECK(unzip.out.find("\"traceName\": \"" + dir.file("a.json.gz") + "\"") != std::string::npos);
  CHECK(!std::filesystem::exists(dir.file("a.json.gz.tmp")));
}

TEST_CASE("Chrome export: parts split at steps, each a whole trace", "[export][chrome]") {
  TempDir dir;
  LoopTrace lt = write_loop(dir, "loop.bin", 12, 150);
  const uint64_t limit = 128 << 10;
  auto r = exporting::export_chrome({lt.path}, dir.file("big.json"), {limit});
  REQUIRE(r);
  REQUIRE(r->files.size() >= 3);
  CHECK(r->warnings.empty());
  CHECK(r->files[0] == dir.file("big.part001.json"));
  std::map<std::string, int> all;
  std::set<std::string> step_names;
  for (const std::string& f : r->files) {
    CHECK(std::filesystem::file_size(f) <= limit);
    Json doc = parse_json_file(f);
    for (auto& [name, n] : check_chrome_document(doc)) {
      all[name] += n;
      if (name.rfind("ProfilerStep#", 0) == 0) CHECK(step_names.insert(name).second);
    }
    // Every op of the main thread starts inside a step of its own part.
    std::vector<std::pair<double, double>> steps;
    for (const Json& e : doc["traceEvents"].arr)
      if (e["ph"].str == "X" && e["name"].str.rfind("ProfilerStep#", 0) == 0)
        steps.push_back({e["ts"].num, e["ts"].num + e["dur"].num});
    for (const Json& e : doc["traceEvents"].arr) {
      if (e["ph"].str != "X" || e["tid"].num != 4242) continue;
      bool inside = false;
      for (auto [s, end] : steps) inside = inside || (e["ts"].num >= s && e["ts"].num < end);
      CHECK(inside);
    }
  }
  CHECK(step_names.size() == 12);
  for (auto& [name, n] : expected_names(lt)) CHECK(all[name] == n);

  // A limit below one step's size: a part per step, each over the limit, said.
  LoopTrace fat = write_loop(dir, "fat.bin", 3, 600);
  auto tight = exporting::export_chrome({fat.path}, dir.file("tight.json.gz"), {64 << 10});
  REQUIRE(tight);
  CHECK(tight->files.back() == dir.file("tight.part003.json.gz"));
  REQUIRE(tight->warnings.size() == 3);
  CHECK(tight->warnings[0].find("over the limit of 65536") != std::string::npos);
}

TEST_CASE("Chrome export: sizes and errors on the command line", "[export][cli]") {
  CHECK(exporting::parse_byte_size("123") == 123u);
  CHECK(exporting::parse_byte_size("64K") == 65536u);
  CHECK(exporting::parse_byte_size("500M") == 500ull << 20);
  CHECK(exporting::parse_byte_size("2g") == 2ull << 30);
  CHECK(!exporting::parse_byte_size(""));
  CHECK(!exporting::parse_byte_size("M"));
  CHECK(!exporting::parse_byte_size("1.5G"));
  CHECK(!exporting::parse_byte_size("-3"));

  TempDir dir;
  LoopTrace lt = write_loop(dir, "loop.bin", 2, 5);
  Run none = run_ptprof("export " + lt.path);
  CHECK(none.status == 2);
  CHECK(none.out.find("--chrome") != std::string::npos);
  Run bad_size = run_ptprof("export " + lt.path + " --chrome " + dir.file("x.json") + " --max-file-size 12Q");
  CHECK(bad_size.status == 2);
  CHECK(bad_size.out.find("'12Q'") != std::string::npos);
  Run env_bad = run_ptprof("export " + lt.path + " --chrome " + dir.file("x.json") +
                           " 2>&1; "
                           "PTPROF_EXPORT_MAX_FILE_SIZE=lots " +
                           PTPROF_BIN + " export " + lt.path + " --chrome " + dir.file("y.json"));
  CHECK(env_bad.status == 2);
  CHECK(env_bad.out.find("PTPROF_EXPORT_MAX_FILE_SIZE 'lots'") != std::string::npos);
  Run perfetto_only = run_ptprof("export " + lt.path + " --perfetto " + dir.file("p.pftrace") + " --max-file-size 1M");
  CHECK(perfetto_only.status == 2);
  CHECK(perfetto_only.out.find("--chrome") != std::string::npos);
  Run missing = run_ptprof("export " + dir.file("nope.bin") + " --chrome " + dir.file("z.json"));
  CHECK(missing.status == 2);
  Run unwritable = run_ptprof("export " + lt.path + " --chrome " + dir.file("no/such/dir/z.json"));
  CHECK(unwritable.status == 2);
  CHECK(unwritable.out.find("no/such/dir/z.json.tmp") != std::string::npos);
  Run ok = run_ptprof("export " + lt.path + " --chrome " + dir.file("ok.json"));
  CHECK(ok.status == 0);
  CHECK(ok.out.find(std::to_string(lt.events) + " events") != std::string::npos);
}
