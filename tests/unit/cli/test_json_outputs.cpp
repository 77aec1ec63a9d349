// Every output of ptprof that is JSON stays JSON a strict parser accepts when
// the program's names are not clean text: names that are not UTF-8, control
// characters, quotes and backslashes, recorded through the C API's ranges and
// marks, in a thread name and in the command line (tests/programs/odd_names.cpp).
// The parser is Python's, held to strict UTF-8 and to no lone surrogate
// (an escape like \udcff parses, but is no character).
#include <catch2/catch.hpp>
#include <string>

#include "launcher_fixtures.hpp"

using ptprof::testing::kPrograms;
using ptprof::testing::kPtprof;
using ptprof::testing::sh;
using ptprof::testing::TempDir;

namespace {

// Exits 0 when every file named is strict JSON (gzip-compressed when its name
// ends in .gz), or, with --text, strict UTF-8; prints why not otherwise.
constexpr const char* kStrictCheck = R"PY(
import gzip, json, sys
def refuse(c): raise ValueError("not JSON: " + c)
text_only = sys.argv[1] == "--text"
for path in sys.argv[2:]:
    data = (gzip.open if path.endswith(".gz") else open)(path, "rb").read()
    text = data.decode("utf-8")
    if text_only: continue
    doc = json.loads(text, parse_constant=refuse)
    json.dumps(doc, ensure_ascii=False).encode("utf-8")
    if "\ufffd" not in json.dumps(doc, ensure_ascii=False): raise ValueError(path + ": no replaced byte: the names are missing")
)PY";

struct Recorded {
  TempDir dir;
  std::string out = (dir.path / "out").string();
  Recorded() {
    // An argument that is not UTF-8 either: the command line is in the outputs.
    auto r = sh(kPtprof + " run -o " + out + " -- " + kPrograms + "/odd_names \"$(printf 'arg\\377\\001')\"");
    INFO(r.output);
    REQUIRE(r.status == 0);
  }
  std::string file(const std::string& name) const { return (dir.path / name).string(); }
};

void check_strict(const std::string& mode, const std::string& files) {
  TempDir scratch;
  const std::string script = (scratch.path / "strict.py").string();
  {
    std::FILE* f = std::fopen(script.c_str(), "w");
    REQUIRE(f);
    std::fputs(kStrictCheck, f);
    std::fclose(f);
  }
  auto r = sh(std::string(PTPROF_PYTHON) + " " + script + " " + mode + " " + files);
  INFO(r.output);
  CHECK(r.status == 0);
}

}  // namespace

TEST_CASE("odd names: report --format json is strict JSON", "[json][report]") {
  Recorded rec;
  auto r = sh(kPtprof + " report --format json " + rec.out + " 2>/dev/null >" + rec.file("report.json"));
  REQUIRE(r.status == 0);
  check_strict("--json", rec.file("report.json"));
}

TEST_CASE("odd names: the Chrome export is strict JSON, plain and gzip-compressed", "[json][export]") {
  Recorded rec;
  auto r = sh(kPtprof + " export " + rec.out + " --chrome " + rec.file("trace.json"));
  INFO(r.output);
  REQUIRE(r.status == 0);
  check_strict("--json", rec.file("trace.json"));
  r = sh(kPtprof + " export " + rec.out + " --chrome " + rec.file("trace.json.gz"));
  INFO(r.output);
  REQUIRE(r.status == 0);
  check_strict("--json", rec.file("trace.json.gz"));
}

TEST_CASE("odd names: diff --format json is strict JSON", "[json][diff]") {
  Recorded rec;
  auto r = sh(kPtprof + " diff " + rec.out + " " + rec.out + " --format json 2>/dev/null >" + rec.file("diff.json"));
  REQUIRE(r.status == 0);
  check_strict("--json", rec.file("diff.json"));
}

TEST_CASE("odd names: report --html writes a page of strict UTF-8", "[json][report][html]") {
  // The page holds no JSON (its only script sorts the tables); its text must
  // still be the UTF-8 it declares.
  Recorded rec;
  auto r = sh(kPtprof + " report " + rec.out + " --html " + rec.file("page.html") + " --baseline " + rec.out);
  INFO(r.output);
  REQUIRE(r.status == 0);
  check_strict("--text", rec.file("page.html"));
}
