// Pushes and pops ranges nested `depth` deep (names d0, d1, ...) as fast as it
// can from each of T threads, so that a small ring overflows mid-nesting: for
// the test that every recorded range is paired with its own pop and that
// recorded + dropped adds up exactly (tests/unit/test_agent_faults.cpp).
//   range_flood [iterations-per-thread] [depth] [threads]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "ptprof.h"

int main(int argc, char** argv) {
  const long iterations = argc > 1 ? std::atol(argv[1]) : 200'000;
  const int depth = argc > 2 ? std::atoi(argv[2]) : 6;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(depth));
  for (int d = 0; d < depth; ++d) names.push_back("d" + std::to_string(d));
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (long i = 0; i < iterations; ++i) {
        for (int d = 0; d < depth; ++d) ptprof_range_push(names[size_t(d)].c_str());
        for (int d = 0; d < depth; ++d) ptprof_range_pop();
      }
    });
  for (auto& t : pool) t.join();
  std::printf("ranges per thread %ld\n", iterations * depth);
  return 0;
}
