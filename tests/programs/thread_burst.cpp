// Starts many short-lived threads, `concurrent` at a time, each recording one
// mark "t" and one range "r": for the test that threads beyond the agent's
// thread table (1024 per process) are recorded once earlier threads have
// exited, or counted under their true cause.
//   thread_burst <threads> <concurrent>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "ptprof.h"

int main(int argc, char** argv) {
  const int total = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int concurrent = argc > 2 ? std::atoi(argv[2]) : 100;
  int started = 0;
  while (started < total) {
    std::vector<std::thread> batch;
    for (int i = 0; i < concurrent && started < total; ++i, ++started)
      batch.emplace_back([] {
        ptprof_mark("t");
        ptprof_range_push("r");
        ptprof_range_pop();
      });
    for (auto& t : batch) t.join();
  }
  std::printf("started %d threads\n", started);
  return 0;
}
