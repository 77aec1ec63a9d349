// Records N marks from each of T threads as fast as it can (default 5,000,000
// from 2 threads): for the exact recorded + dropped accounting test.
//   mark_flood [events-per-thread] [threads]
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "ptprof.h"

int main(int argc, char** argv) {
  long per_thread = argc > 1 ? std::atol(argv[1]) : 5'000'000;
  int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([per_thread] {
      for (long i = 0; i < per_thread; ++i) ptprof_mark("flood");
    });
  for (auto& t : pool) t.join();
  return 0;
}
