// Status and Result<T> (common/include/ptprof/status.hpp), the one way a
// fallible call reports failure.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "ptprof/status.hpp"

using ptprof::Result;
using ptprof::Status;

namespace {

Result<int> parse_digit(char c) {
  if (c < '0' || c > '9') return Status::error(std::string("'") + c + "' is not a digit");
  return c - '0';
}

}  // namespace

TEST_CASE("Status: ok by default, an error carries its message", "[status]") {
  Status ok;
  CHECK(ok.ok());
  CHECK(ok.message().empty());
  Status failed = Status::error("disk full");
  CHECK_FALSE(failed.ok());
  CHECK_FALSE(static_cast<bool>(failed));
  CHECK(failed.message() == "disk full");
}

TEST_CASE("Result: a value or the error that stands for it", "[status]") {
  auto seven = parse_digit('7');
  REQUIRE(seven.ok());
  CHECK(*seven == 7);
  CHECK(seven.error().empty());
  auto bad = parse_digit('x');
  CHECK_FALSE(bad.ok());
  CHECK(bad.error() == "'x' is not a digit");
  CHECK(bad.status().message() == bad.error());

  // Move-only values move out.
  Result<std::unique_ptr<int>> owned = std::make_unique<int>(3);
  REQUIRE(owned.ok());
  std::unique_ptr<int> taken = std::move(*owned);
  CHECK(*taken == 3);
}

TEST_CASE("for_each_line: every line of a multi-line message, none when empty", "[status]") {
  std::vector<std::string> lines;
  auto collect = [&](std::string_view l) { lines.emplace_back(l); };
  ptprof::for_each_line("a\nbb\nccc", collect);
  CHECK(lines == std::vector<std::string>{"a", "bb", "ccc"});
  lines.clear();
  ptprof::for_each_line("", collect);
  CHECK(lines.empty());
}
