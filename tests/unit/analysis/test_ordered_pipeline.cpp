// ordered_pipeline: items produced on worker threads, consumed in order,
// with at most workers + 1 results alive at once.
#include <atomic>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <vector>

#include "report/ordered_pipeline.hpp"

namespace {

// Counts the results alive, and the most ever alive at once.
struct Alive {
  std::atomic<int> now{0}, most{0};
};

struct Result {
  Result(size_t i, Alive& a) : item(i), alive(&a) { note(); }
  Result(Result&& o) noexcept : item(o.item), alive(o.alive) { o.alive = nullptr; }
  Result& operator=(Result&&) = delete;
  ~Result() {
    if (alive) --alive->now;
  }
  void note() {
    const int n = ++alive->now;
    int m = alive->most;
    while (n > m && !alive->most.compare_exchange_weak(m, n)) {
    }
  }
  size_t item;
  Alive* alive;
};

}  // namespace

TEST_CASE("ordered_pipeline consumes every item in order, few at a time", "[report][parallel]") {
  for (unsigned workers : {0u, 1u, 2u, 3u, 8u}) {
    INFO("workers " << workers);
    Alive alive;
    std::vector<size_t> order;
    ptprof::report::detail::ordered_pipeline<Result>(
        200, workers, [&](size_t i) { return Result(i, alive); },
        [&](size_t i, Result&& r) {
          CHECK(r.item == i);
          order.push_back(i);
          return true;
        });
    REQUIRE(order.size() == 200);
    for (size_t i = 0; i < order.size(); ++i) CHECK(order[i] == i);
    CHECK(alive.now == 0);
    CHECK(alive.most <= int(std::max(workers, 1u)) + 1);
  }
}

TEST_CASE("ordered_pipeline stops when told, and rethrows in the item's turn", "[report][parallel]") {
  std::vector<size_t> seen;
  ptprof::report::detail::ordered_pipeline<size_t>(
      100, 3, [](size_t i) { return i; },
      [&](size_t i, size_t&&) {
        seen.push_back(i);
        return i < 9;
      });
  CHECK(seen.size() == 10);

  seen.clear();
  auto run = [&] {
    ptprof::report::detail::ordered_pipeline<size_t>(
        100, 3,
        [](size_t i) {
          if (i == 20) throw std::runtime_error("item 20");
          return i;
        },
        [&](size_t i, size_t&&) {
          seen.push_back(i);
          return true;
        });
  };
  CHECK_THROWS_WITH(run(), "item 20");
  CHECK(seen.size() == 20);  // the items before it were consumed
}
