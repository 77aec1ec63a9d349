// The snapshot's pickle writer (analysis/src/memory/pickle_writer.hpp),
// checked by Python's own unpickler: each value is written, loaded with
// pickle.loads by the python3 on PATH (no torch needed) and compared by repr.
#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "launcher_fixtures.hpp"
#include "memory/pickle_writer.hpp"

using namespace ptprof;
using namespace ptprof::testing;
namespace pk = ptprof::memory::pickle;

namespace {

// repr(pickle.loads(bytes)), or the error Python printed.
std::string python_repr(const std::string& bytes) {
  TempDir d;
  const std::string path = (d.path / "v.pickle").string();
  std::ofstream(path, std::ios::binary) << bytes;
  auto r = sh("python3 -c 'import pickle,sys; print(repr(pickle.loads(open(sys.argv[1], \"rb\").read())))' " + path);
  INFO(r.output);
  REQUIRE(r.status == 0);
  while (!r.output.empty() && r.output.back() == '\n') r.output.pop_back();
  return r.output;
}

}  // namespace

TEST_CASE("pickle writer: protocol 4 header and plain values", "[memory][pickle]") {
  const std::string p = pk::dumps(pk::Value());
  CHECK(p == std::string("\x80\x04N.", 4));
  CHECK(python_repr(pk::dumps(pk::Value(true))) == "True");
  CHECK(python_repr(pk::dumps(pk::Value(false))) == "False");
  CHECK(python_repr(pk::dumps(pk::Value(1.5))) == "1.5");
  CHECK(python_repr(pk::dumps(pk::Value("caf\xc3\xa9"))) == "'caf\xc3\xa9'");
  CHECK(python_repr(pk::dumps(pk::Value(std::string(300, 'x')))) == "'" + std::string(300, 'x') + "'");
}

TEST_CASE("pickle writer: integers at every width and sign", "[memory][pickle]") {
  const int64_t ints[] = {0,
                          1,
                          -1,
                          127,
                          128,
                          255,
                          256,
                          -129,
                          INT32_MAX,
                          INT32_MIN,
                          int64_t(INT32_MAX) + 1,
                          int64_t(INT32_MIN) - 1,
                          1LL << 40,
                          -(1LL << 40),
                          0x7f0000000000LL,
                          (1LL << 55) - 1,
                          -(1LL << 55),
                          INT64_MAX,
                          INT64_MIN};
  for (int64_t i : ints) {
    INFO(i);
    CHECK(python_repr(pk::dumps(pk::Value(i))) == std::to_string(i));
  }
  const uint64_t big[] = {uint64_t(INT64_MAX) + 1, UINT64_MAX, 0xffff800000000000ULL};
  for (uint64_t u : big) {
    INFO(u);
    CHECK(python_repr(pk::dumps(pk::Value(u))) == std::to_string(u));
  }
}

TEST_CASE("pickle writer: nested dicts and lists, past a batch of 1000", "[memory][pickle]") {
  pk::List many;
  for (int i = 0; i < 2500; ++i) many.emplace_back(i);
  pk::Dict inner{{"a", 1}, {"b", pk::List{}}, {"c", pk::Dict{}}};
  const pk::Value v(pk::Dict{{"segments", pk::List{pk::Value(inner)}}, {"many", std::move(many)}});
  std::string want = "{'segments': [{'a': 1, 'b': [], 'c': {}}], 'many': [";
  for (int i = 0; i < 2500; ++i) want += (i ? ", " : "") + std::to_string(i);
  want += "]}";
  CHECK(python_repr(pk::dumps(v)) == want);
}
