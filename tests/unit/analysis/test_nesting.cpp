// model/event_tree.hpp's NestingStack: the one walk that nests events by
// time, with torch's rule and the two variants its callers need.
#include <catch2/catch.hpp>
#include <utility>
#include <vector>

#include "model/event_tree.hpp"

using ptprof::model::NestingStack;
using ptprof::model::nests_in;
using ptprof::model::PartialOverlap;

namespace {

using Closed = std::vector<std::pair<uint32_t, int64_t>>;  // (id, end) in the order closed

struct Walk {
  NestingStack stack;
  Closed closed;
  explicit Walk(PartialOverlap p = PartialOverlap::Unnested) : stack(p) {}
  // settle + open: the span's parent, and the end it was opened with.
  std::pair<int64_t, int64_t> span(uint32_t id, int64_t start, int64_t end) {
    const int64_t parent = stack.settle(start, end, [&](uint32_t c, int64_t e) { closed.emplace_back(c, e); });
    return {parent, stack.open(id, start, end)};
  }
};

}  // namespace

TEST_CASE("nests_in: torch's rule", "[report][nesting]") {
  CHECK(nests_in(0, 10, 0, 10));
  CHECK(nests_in(0, 10, 2, 10));
  CHECK(nests_in(0, 10, 9, 9));
  CHECK_FALSE(nests_in(0, 10, 10, 10));  // empty, at the end
  CHECK_FALSE(nests_in(0, 10, 5, 11));   // overlaps the end
  CHECK_FALSE(nests_in(2, 10, 1, 5));    // starts before
}

TEST_CASE("NestingStack: torch's tree; a partial overlap goes up a level", "[report][nesting]") {
  Walk w;
  CHECK(w.span(0, 0, 100).first == NestingStack::kNone);
  CHECK(w.span(1, 10, 50).first == 0);
  CHECK(w.span(2, 20, 30).first == 1);
  CHECK(w.span(3, 40, 60).first == 0);  // overlaps 1's end: 1 and 2 close, 0 holds it
  CHECK(w.closed == Closed{{2, 30}, {1, 50}});
  CHECK(w.span(4, 60, 60).first == 0);  // empty, at 3's end: not 3's
  CHECK(w.closed == Closed{{2, 30}, {1, 50}, {3, 60}});
}

TEST_CASE("NestingStack: Perfetto's clipped slices", "[report][nesting]") {
  Walk w(PartialOverlap::Clipped);
  w.span(0, 0, 100);
  w.span(1, 10, 50);
  const auto [parent, end] = w.span(2, 40, 60);  // nests in 1, cut at its end
  CHECK(parent == 1);
  CHECK(end == 50);
  CHECK(w.span(3, 50, 70).first == 0);  // 1 and 2 ended at 50
  CHECK(w.closed == Closed{{2, 50}, {1, 50}});
  w.stack.close_all([&](uint32_t c, int64_t e) { w.closed.emplace_back(c, e); });
  CHECK(w.closed == Closed{{2, 50}, {1, 50}, {3, 70}, {0, 100}});
}

TEST_CASE("NestingStack: an instant belongs to the span open at it, its last moment included", "[report][nesting]") {
  Walk w;
  w.span(0, 0, 100);
  w.span(1, 10, 20);
  CHECK(w.stack.instant(10) == 1);
  CHECK(w.stack.instant(20) == 1);  // the op's last moment: still the op's (MemRecordsAcc.in_interval)
  CHECK(w.stack.instant(21) == 0);  // 1 has ended
  CHECK(w.stack.instant(101) == NestingStack::kNone);
}
