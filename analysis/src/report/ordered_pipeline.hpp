// Work on items 0..count-1 whose results must be combined in item order:
// `produce(i)` runs on worker threads, `consume(i, result)` on the calling
// thread, strictly in order of i, so whatever consume builds is what a
// plain loop would build. The report reads many trace files this way
// (ReportBuilder::add_files): decoding a file and computing its part need
// nothing from the others; adding the parts up does.
#pragma once
#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace ptprof::report::detail {

// At most workers + 1 results exist at once (being produced, waiting, or
// being consumed), so memory is bounded by the number of workers, not of
// items. `consume` returning false stops the run: no further item starts,
// and the call returns once the workers have finished the ones they hold.
// workers <= 1: no thread, the plain loop. An exception in `produce` is
// rethrown here, in its item's turn. T need only be move-constructible.
template <class T, class Produce, class Consume>
void ordered_pipeline(size_t count, unsigned workers, Produce&& produce, Consume&& consume) {
  if (workers <= 1 || count <= 1) {
    for (size_t i = 0; i < count; ++i)
      if (!consume(i, produce(i))) return;
    return;
  }
  struct Slot {
    std::optional<T> value;
    std::exception_ptr error;
    bool ready = false;
  };
  workers = unsigned(std::min<size_t>(workers, count));  // a thread per item at most
  const size_t window = size_t(workers) + 1;
  std::vector<Slot> slots(window);  // item i's result waits in slots[i % window]
  std::mutex mu;
  std::condition_variable changed;
  size_t next = 0;      // the next item a worker takes
  size_t consumed = 0;  // items whose result has been consumed and freed
  bool stop = false;

  auto work = [&] {
    std::unique_lock lock(mu);
    for (;;) {
      // Item i may start once item i - window's result is gone: its slot is free.
      changed.wait(lock, [&] { return stop || next >= count || next < consumed + window; });
      if (stop || next >= count) return;
      const size_t i = next++;
      lock.unlock();
      std::optional<T> value;
      std::exception_ptr error;
      try {
        value.emplace(produce(i));
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      Slot& s = slots[i % window];
      if (value) s.value.emplace(std::move(*value));
      s.error = error;
      s.ready = true;
      changed.notify_all();
    }
  };
  {
    std::vector<std::jthread> threads;
    threads.reserve(workers);
    // Stops the workers on every way out, an exception from consume included.
    struct Stopper {
      std::mutex& mu;
      std::condition_variable& changed;
      bool& stop;
      ~Stopper() {
        std::lock_guard lock(mu);
        stop = true;
        changed.notify_all();
      }
    };
    for (unsigned w = 0; w < workers; ++w) threads.emplace_back(work);
    Stopper stopper{mu, changed, stop};  // destroyed before `threads` joins them
    for (size_t i = 0; i < count; ++i) {
      std::optional<T> value;
      std::exception_ptr error;
      {
        std::unique_lock lock(mu);
        Slot& s = slots[i % window];
        changed.wait(lock, [&] { return s.ready; });
        if (s.value) value.emplace(std::move(*s.value));
        error = s.error;
        s.value.reset();
        s.error = nullptr;
        s.ready = false;
      }
      if (error) std::rethrow_exception(error);
      const bool more = consume(i, std::move(*value));
      value.reset();  // freed before a worker may take item i + window
      {
        std::lock_guard lock(mu);
        consumed = i + 1;
        changed.notify_all();
      }
      if (!more) return;
    }
  }
}

}  // namespace ptprof::report::detail
