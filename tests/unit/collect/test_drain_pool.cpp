// DrainPool: the collector's threads (launcher/collect/drain_pool.hpp).
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "collect/drain_pool.hpp"

using ptprof::launcher::DrainPool;

TEST_CASE("drain pool: every item once per round, round after round, for any number of items",
          "[collector][parallel]") {
  const unsigned threads = GENERATE(1u, 2u, 4u, 8u);
  DrainPool pool(threads);
  CHECK(pool.threads() == threads);
  for (size_t round = 0; round < 300; ++round) {
    const size_t n = round % 11;
    std::vector<std::atomic<int>> hits(n);
    pool.for_each(n, [&](size_t i) { hits[i].fetch_add(1); });
    for (size_t i = 0; i < n; ++i) {
      INFO("threads " << threads << ", round " << round << ", item " << i);
      REQUIRE(hits[i].load() == 1);
    }
  }
}

TEST_CASE("drain pool: as many items run at once as there are threads, whatever the rounds before took",
          "[collector][parallel]") {
  DrainPool pool(4);
  // Rounds of fewer items than threads take on fewer workers; the last
  // needs all four threads.
  for (size_t n : {2, 3, 1, 2, 4}) {
    INFO(n << " items");
    std::atomic<size_t> started{0};
    std::atomic<size_t> met{0};
    // Each item waits for all of the round's to start: with fewer threads
    // running than items, the first would wait in vain (for the generous
    // limit below, then fail).
    pool.for_each(n, [&](size_t) {
      started.fetch_add(1);
      const auto limit = std::chrono::steady_clock::now() + std::chrono::minutes(10);  // a hang guard only
      while (started.load() < n && std::chrono::steady_clock::now() < limit) std::this_thread::yield();
      if (started.load() == n) met.fetch_add(1);
    });
    CHECK(met.load() == n);
  }
}

TEST_CASE("drain pool: an item's exception is rethrown after the round, and the next round runs",
          "[collector][parallel]") {
  DrainPool pool(3);
  std::atomic<int> done{0};
  REQUIRE_THROWS_WITH(pool.for_each(8,
                                    [&](size_t i) {
                                      if (i == 5) throw std::runtime_error("item 5 failed");
                                      done.fetch_add(1);
                                    }),
                      "item 5 failed");
  CHECK(done.load() == 7);  // the others still ran
  std::atomic<int> again{0};
  pool.for_each(8, [&](size_t) { again.fetch_add(1); });
  CHECK(again.load() == 8);
}
