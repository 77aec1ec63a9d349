// Locks the bridge engages that a fork must not find held by another thread.
//
// A fork copies only the forking thread: a mutex another thread held at that
// moment stays locked in the child for good, and the child hangs the first
// time it takes it. torch's CPU allocator keeps the sizes of the blocks it
// reports under a mutex of c10::ProfiledCPUMemoryReporter, taken on every
// allocation and free once the memory reporter (memory_reporter.hpp) says
// memory is profiled (--profile-memory); without ptprof torch takes it only
// while torch.profiler profiles memory. A child forked while another thread
// ran ops hung in its first allocation (issue #28). The mutex is held across
// fork, as glibc holds malloc's: taken in the prepare handler, released in
// parent and child. Its holders take nothing else while they hold it, so the
// prepare handler never waits for long.
//
// The bridge's toggle mutex needs no such care: it is taken only under the
// agent's step mutex, which the agent holds across fork (agent/src/runtime/runtime.cpp).
#pragma once
#include <c10/core/CPUAllocator.h>
#include <pthread.h>

#include <cstddef>
#include <mutex>
#include <type_traits>
#include <unordered_map>

namespace ptprof::torch_bridge {

// The reporter's mutex, when its class is laid out as every torch from 1.13 on
// declares it (mutex_ first, then size_table_, allocated_, log_cnt_, all
// private): standard layout, so its first member is at its address. Another
// layout: null, and that lock is not guarded.
inline std::mutex* cpu_memory_reporter_mutex() {
  using Reporter = c10::ProfiledCPUMemoryReporter;
  struct Declared {
    std::mutex mutex;
    std::unordered_map<void*, size_t> size_table;
    size_t allocated;
    size_t log_cnt;
  };
  if constexpr (std::is_standard_layout_v<Reporter> && sizeof(Reporter) == sizeof(Declared) &&
                alignof(Reporter) == alignof(Declared)) {
    return reinterpret_cast<std::mutex*>(&c10::profiledCPUMemoryReporter());
  } else {
    return nullptr;
  }
}

class ForkGuard {
 public:
  // Once, from the bridge's init.
  static void install() {
    reporter_ = cpu_memory_reporter_mutex();
    if (reporter_) pthread_atfork(&prepare, &release, &release);
  }

 private:
  static void prepare() { reporter_->lock(); }
  static void release() { reporter_->unlock(); }

  static inline std::mutex* reporter_ = nullptr;
};

}  // namespace ptprof::torch_bridge
