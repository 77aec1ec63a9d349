// Native call stacks: return addresses from libunwind's unw_backtrace on the
// hot path; the module each lies in (its path and the address's offset from
// the module's load bias) only when a thread defines a new stack.
//
// libunwind is opened with dlopen(RTLD_LOCAL) at first use, never linked:
// libunwind.so exports _Unwind_* and backtrace, and a preloaded agent that
// linked it would put them ahead of libgcc's for the whole process (every
// C++ exception of the target would unwind through them).
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "stacks/native_walk_cache.hpp"

namespace ptprof::agent {

class NativeStacks {
 public:
  // Return addresses of the calling thread, innermost first; 0 when
  // libunwind is not available. `walks`: the thread's remembered walks
  // (native_walk_cache.hpp), of stacks that end in [stop_begin, stop_end).
  uint32_t capture(uintptr_t* out, uint32_t max, NativeWalkCache& walks, uintptr_t stop_begin, uintptr_t stop_end);
  // The module `addr` lies in (its path's arena id) and its offset from the
  // module's load bias (an address of its ELF image); false when in none, or
  // in the agent itself.
  bool locate(uintptr_t addr, uint32_t* module, uint64_t* offset);
  // The executable segments [begin, end) of the module holding `addr`;
  // false when in none.
  bool segments(uintptr_t addr, uintptr_t* begin, uintptr_t* end);
  // Fork: no thread inside libunwind across it (base/fork_gate.hpp), and mu_
  // held (Runtime::before_fork, before the intern mutex, which locate()
  // takes inside it); the child forgets the modules, whose names were
  // interned in the parent's arena.
  void lock_for_fork() {
    gate_.close();
    mu_.lock();
  }
  void unlock_after_fork(bool child) {
    if (child) modules_.clear();
    mu_.unlock();
    if (child)
      gate_.open_in_child();
    else
      gate_.open_in_parent();
  }

 private:
  struct Module {
    uintptr_t begin = 0, end = 0;  // the executable segments
    uintptr_t bias = 0;
    uint32_t name = 0;  // arena id of the path
    bool agent = false;
  };
  bool load();
  void refresh();  // caller holds mu_
  const Module* find(uintptr_t addr) const;

  std::atomic<int> state_{0};  // 0 unknown, 1 ready, 2 unavailable
  Unwinder unwinder_;
  ForkGate gate_;
  std::mutex mu_;
  std::vector<Module> modules_;  // guarded by mu_
};

}  // namespace ptprof::agent
