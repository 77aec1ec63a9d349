// BoundedStack (agent/src/base/bounded_stack.hpp): the one overflow rule of the
// agent's per-thread stacks (operators, ranges, scopes).
#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>

#include "base/bounded_stack.hpp"

using ptprof::agent::BoundedStack;

TEST_CASE("BoundedStack: levels beyond the capacity are counted, not kept", "[agent]") {
  BoundedStack<uint32_t, 2> s;
  CHECK(s.empty());
  CHECK(s.innermost() == nullptr);
  CHECK(s.push(10));
  CHECK(s.push(20));
  CHECK(s.full());
  CHECK_FALSE(s.push(30));  // counted only
  CHECK(s.depth() == 3);
  CHECK(s.innermost() == nullptr);  // the innermost level is not kept
  CHECK(s.pop() == std::nullopt);   // ... and gives nothing back
  REQUIRE(s.innermost() != nullptr);
  CHECK(*s.innermost() == 20);
  CHECK(s.pop() == std::optional<uint32_t>(20));
  CHECK(s.pop() == std::optional<uint32_t>(10));
  CHECK(s.empty());
}

TEST_CASE("BoundedStack: an end found a few levels down closes its own level", "[agent]") {
  BoundedStack<uint32_t, 8> s;
  for (uint32_t v : {1u, 2u, 3u, 4u}) REQUIRE(s.push(v));
  const auto is = [](uint32_t want) { return [want](uint32_t v) { return v == want; }; };
  CHECK(s.pop_matching(is(2), 4) == std::optional<uint32_t>(2));  // out of order
  CHECK(s.depth() == 3);
  CHECK(*s.innermost() == 4);
  CHECK(s.pop_matching(is(3), 1) == std::nullopt);  // one level beyond the reach: nothing closes
  CHECK(s.depth() == 3);
  CHECK(s.pop_matching(is(4), 1) == std::optional<uint32_t>(4));
  CHECK(s.pop_matching(is(3), 1) == std::optional<uint32_t>(3));
  CHECK(s.pop_matching(is(1), 1) == std::optional<uint32_t>(1));
  CHECK(s.empty());
  CHECK(s.pop_matching(is(1), 1) == std::nullopt);  // nothing open: nothing to close
  CHECK(s.empty());
}

TEST_CASE("BoundedStack: an end that matches no kept level closes an unkept one", "[agent]") {
  BoundedStack<uint32_t, 1> s;
  REQUIRE(s.push(1));
  CHECK_FALSE(s.push(2));
  CHECK_FALSE(s.push(3));
  const auto never = [](uint32_t) { return false; };
  CHECK(s.pop_matching(never, 4) == std::nullopt);
  CHECK(s.depth() == 2);
  CHECK(s.pop_matching(never, 4) == std::nullopt);
  CHECK(s.depth() == 1);
  CHECK(s.pop_matching(never, 4) == std::nullopt);  // a kept level is never closed by a stranger's end
  CHECK(s.depth() == 1);
  CHECK(s.pop_matching([](uint32_t v) { return v == 1; }, 4) == std::optional<uint32_t>(1));
  CHECK(s.empty());
}
