// Records N marks from each of T threads as fast as it can (default 5,000,000
// from 2 threads): for the exact recorded + dropped accounting test.
//   mark_flood [events-per-thread] [threads]
// Every thread records its first mark, and so holds its ring, before any
// floods: on a loaded machine a thread could otherwise finish (and give its
// ring back) before the last one started, and the short-/dev/shm test saw
// no shortage.
#include <barrier>
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
  std::barrier all_hold_rings(threads);
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([per_thread, &all_hold_rings] {
      if (per_thread > 0) ptprof_mark("flood");
      all_hold_rings.arrive_and_wait();
      for (long i = 1; i < per_thread; ++i) ptprof_mark("flood");
    });
  for (auto& t : pool) t.join();
  return 0;
}
