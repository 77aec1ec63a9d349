// Starts B batches of T short-lived threads; every thread of a batch opens a
// range named "work", waits until the whole batch is alive (so that T threads
// hold a slot at once), closes it and exits. For the tests of thread slot
// reuse (10,000 threads in one process) and of a short /dev/shm
// (tests/unit/test_agent_faults.cpp).
//   thread_churn [batches] [threads-per-batch]
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "ptprof.h"

int main(int argc, char** argv) {
  const int batches = argc > 1 ? std::atoi(argv[1]) : 100;
  const int per_batch = argc > 2 ? std::atoi(argv[2]) : 100;
  for (int b = 0; b < batches; ++b) {
    std::barrier all_alive(per_batch);
    std::vector<std::thread> pool;
    pool.reserve(static_cast<size_t>(per_batch));
    for (int t = 0; t < per_batch; ++t)
      pool.emplace_back([&all_alive] {
        ptprof_range_push("work");
        all_alive.arrive_and_wait();
        ptprof_range_pop();
      });
    for (auto& t : pool) t.join();
  }
  std::printf("threads %d\n", batches * per_batch);
  return 0;
}
