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

// Fallible steps chained with the early-return macros.
Result<int> two_digits(const char* s, int* calls) {
  PTPROF_ASSIGN_OR_RETURN(const int tens, (++*calls, parse_digit(s[0])));
  int ones = 0;
  PTPROF_ASSIGN_OR_RETURN(ones, parse_digit(s[1]));
  return tens * 10 + ones;
}

Status both_digits(const char* s) {
  PTPROF_RETURN_IF_ERROR(parse_digit(s[0]));  // a Result
  int calls = 0;
  PTPROF_RETURN_IF_ERROR(two_digits(s, &calls) ? Status() : Status::error("second is not"));  // a Status
  return Status::error("both fine");
}

Result<std::unique_ptr<int>> boxed(char c) {
  PTPROF_ASSIGN_OR_RETURN(auto digit, parse_digit(c));
  return std::make_unique<int>(digit);
}

Result<std::unique_ptr<int>> reboxed(char c) {
  PTPROF_ASSIGN_OR_RETURN(std::unique_ptr<int> box, boxed(c));  // move-only values move through
  *box += 1;
  return box;
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

TEST_CASE("PTPROF_ASSIGN_OR_RETURN and PTPROF_RETURN_IF_ERROR: the first failure returns, once", "[status]") {
  int calls = 0;
  auto ok = two_digits("42", &calls);
  REQUIRE(ok.ok());
  CHECK(*ok == 42);
  CHECK(calls == 1);  // the expression is evaluated once

  auto first_bad = two_digits("x2", &calls);
  CHECK(first_bad.error() == "'x' is not a digit");
  auto second_bad = two_digits("4y", &calls);
  CHECK(second_bad.error() == "'y' is not a digit");
  CHECK(calls == 3);

  CHECK(both_digits("z1").message() == "'z' is not a digit");  // from a Result into a Status
  CHECK(both_digits("1z").message() == "second is not");       // from a Status
  CHECK(both_digits("12").message() == "both fine");

  auto box = reboxed('6');
  REQUIRE(box.ok());
  CHECK(**box == 7);
  CHECK(reboxed('q').error() == "'q' is not a digit");
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
