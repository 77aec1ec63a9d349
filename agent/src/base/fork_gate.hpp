// Keeps fork() out of code that takes locks a fork child inherits held.
//
// libunwind's walks take its own global locks and glibc's loader lock (through
// dl_iterate_phdr); neither is reset in a fork child. A thread that forks while
// another thread walks leaves the child's copy of such a lock held by a thread
// the child does not have, and the child's first walk waits forever (#28,
// defect 5: a child forked from a thread under --with-stack, hung).
//
// Walking threads pass through the gate; the forking thread closes it in its
// pthread_atfork prepare handler, waits until no thread is inside, and opens
// it after the fork in both processes. A thread that arrives while the gate
// is closed waits (it would wait for the fork's locks anyway). Closes nest:
// two threads may fork at once.
#pragma once
#include <sched.h>

#include <atomic>
#include <cstdint>

namespace ptprof::agent {

class ForkGate {
 public:
  // Inside the gate for its lifetime; a null gate lets everyone through.
  class Pass {
   public:
    explicit Pass(ForkGate* gate) : gate_(gate) {
      if (gate_) gate_->enter();
    }
    ~Pass() {
      if (gate_) gate_->leave();
    }
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;

   private:
    ForkGate* gate_;
  };

  // The forking thread, before fork: once this returns no thread is inside,
  // and none enters until open_*().
  void close() {
    closers_.fetch_add(1, std::memory_order_seq_cst);
    while (inside_.load(std::memory_order_seq_cst) != 0) sched_yield();
  }
  void open_in_parent() { closers_.fetch_sub(1, std::memory_order_seq_cst); }
  // The child has only the forking thread: no one is inside, no one closes.
  void open_in_child() {
    inside_.store(0, std::memory_order_relaxed);
    waiting_.store(0, std::memory_order_relaxed);
    closers_.store(0, std::memory_order_seq_cst);
  }

  // For tests.
  uint32_t inside() const { return inside_.load(std::memory_order_relaxed); }
  bool closing() const { return closers_.load(std::memory_order_relaxed) != 0; }
  uint32_t waiting() const { return waiting_.load(std::memory_order_relaxed); }

 private:
  // Sequentially consistent on both sides (a thread counts itself in, then
  // looks; the closer marks, then counts): either the entering thread sees
  // the gate closed or the closer sees it inside.
  void enter() {
    for (;;) {
      if (closers_.load(std::memory_order_seq_cst) != 0) [[unlikely]] {
        waiting_.fetch_add(1, std::memory_order_relaxed);
        while (closers_.load(std::memory_order_seq_cst) != 0) sched_yield();
        waiting_.fetch_sub(1, std::memory_order_relaxed);
      }
      inside_.fetch_add(1, std::memory_order_seq_cst);
      if (closers_.load(std::memory_order_seq_cst) == 0) return;
      inside_.fetch_sub(1, std::memory_order_seq_cst);
    }
  }
  void leave() { inside_.fetch_sub(1, std::memory_order_release); }

  std::atomic<uint32_t> closers_{0};
  std::atomic<uint32_t> inside_{0};
  std::atomic<uint32_t> waiting_{0};  // threads held outside (tests watch it)
};

}  // namespace ptprof::agent
