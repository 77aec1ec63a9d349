// The threads the collector drains its processes on. A round of work over
// n items (for_each) runs on the pool's threads and the caller's, and
// returns when every item is done; between rounds the threads sleep. The
// collector hands it one item per process: a process's rings, windows and
// files are its own, so each is drained by one thread at a time and its
// windows' writers are fed in order, while a job of many processes (a
// node's ranks and their DataLoader workers) is drained on several cores.
#pragma once
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <semaphore>
#include <thread>
#include <vector>

namespace ptprof::launcher {

class DrainPool {
 public:
  // `threads` in all, the caller's included: threads <= 1 starts none.
  explicit DrainPool(unsigned threads);
  ~DrainPool();
  DrainPool(const DrainPool&) = delete;
  DrainPool& operator=(const DrainPool&) = delete;

  unsigned threads() const { return unsigned(workers_.size()) + 1; }
  // work(i) for every i in [0, n), each once, on whichever thread takes it
  // first; returns when all are done. An exception from `work` is rethrown
  // here (the first one) once the round is over.
  void for_each(size_t n, const std::function<void(size_t)>& work);

 private:
  // A semaphore per worker rather than one condition variable for all: a
  // round wakes only the workers it needs, and a release cannot be lost.
  // (One condition variable with a notify_one per worker needed hung in
  // test_drain_pool under ThreadSanitizer, every worker asleep with a seat
  // of the round untaken; the lost wake-up of glibc bug 25847 is a known
  // way to that.)
  struct Worker {
    std::binary_semaphore go{0};
    std::jthread thread;
  };
  void serve(Worker& w);
  void take_items();

  // The round under way, set before its workers' `go` is released.
  const std::function<void(size_t)>* work_ = nullptr;
  size_t count_ = 0;
  std::atomic<size_t> next_{0};
  std::atomic<bool> stop_{false};
  std::counting_semaphore<> done_{0};  // one release per worker the round took on
  std::mutex error_mu_;
  std::exception_ptr error_;
  std::vector<std::unique_ptr<Worker>> workers_;  // joined by the destructor
};

}  // namespace ptprof::launcher
