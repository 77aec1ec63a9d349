#include "collect/drain_pool.hpp"

#include <algorithm>
#include <utility>

namespace ptprof::launcher {

DrainPool::DrainPool(unsigned threads) {
  for (unsigned i = 1; i < threads; ++i) {
    workers_.push_back(std::make_unique<Worker>());
    Worker& w = *workers_.back();
    w.thread = std::jthread([this, &w] { serve(w); });
  }
}

DrainPool::~DrainPool() {
  stop_.store(true);
  for (auto& w : workers_) w->go.release();
  for (auto& w : workers_) w->thread.join();
}

void DrainPool::take_items() {
  for (size_t i; (i = next_.fetch_add(1, std::memory_order_relaxed)) < count_;) {
    try {
      (*work_)(i);
    } catch (...) {
      std::lock_guard lock(error_mu_);
      if (!error_) error_ = std::current_exception();
    }
  }
}

void DrainPool::serve(Worker& w) {
  for (;;) {
    w.go.acquire();
    if (stop_.load()) return;
    take_items();
    done_.release();
  }
}

void DrainPool::for_each(size_t n, const std::function<void(size_t)>& work) {
  if (workers_.empty() || n <= 1) {
    for (size_t i = 0; i < n; ++i) work(i);
    return;
  }
  work_ = &work;
  count_ = n;
  next_.store(0, std::memory_order_relaxed);
  // No more workers than items besides the caller's: a job of 3 processes
  // on a pool of 8 wakes 2 each round, not 7.
  const size_t taken = std::min(workers_.size(), n - 1);
  for (size_t i = 0; i < taken; ++i) workers_[i]->go.release();
  take_items();
  for (size_t i = 0; i < taken; ++i) done_.acquire();
  work_ = nullptr;
  std::exception_ptr error;
  {
    std::lock_guard lock(error_mu_);
    error = std::exchange(error_, nullptr);
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace ptprof::launcher
