// A thread's native walks, remembered so that a stack the thread has walked
// before is not walked again: libunwind's unw_backtrace costs ~10 ns a frame
// (its per-frame lookup of the unwind rule), and an op begins 20 to 40 frames
// above the interpreter.
//
// A walk that reached the stop range (the interpreter's code) is remembered
// with where each return address it found lies on the stack, as an offset
// from the walking function's frame. A later walk from a frame at the same
// address reads the stack at those offsets: when every remembered return
// address is there, the stack holds the same calls (the unwinder would read
// the same return addresses at the same places) and the remembered frames
// are returned without walking. At most kVariants different stacks are kept
// per frame address; when more appear, or when a check finds a remembered
// stack wrong, that address is always walked from then on.
//
// What it assumes (docs/stacks.md): that no frame between the op and the
// interpreter lays its stack out differently (alloca, a frame-pointer-based
// unwind rule) in a way that moves its callers' frames while stale copies of
// the same return addresses sit exactly where the remembered walk found them.
// Every kRecheck-th use of a remembered stack walks anyway and compares; a
// difference marks the address as walked always (stats().mismatches).
//
// x86-64 only (a return address lies just below its caller's stack pointer);
// elsewhere every capture walks.
#pragma once
#include <cstdint>
#include <vector>

#include "base/fork_gate.hpp"

namespace ptprof::agent {

// libunwind's entry points the cache needs (dlsym'd by NativeStacks).
struct Unwinder {
  int (*backtrace)(void**, int) = nullptr;
  int (*getcontext)(void*) = nullptr;               // _Ux86_64_getcontext
  int (*init_local)(void*, void*) = nullptr;        // _ULx86_64_init_local
  int (*step)(void*) = nullptr;                     // _ULx86_64_step
  int (*get_reg)(void*, int, uint64_t*) = nullptr;  // _ULx86_64_get_reg
  ForkGate* gate = nullptr;                         // passed through around every call above (base/fork_gate.hpp)
  bool can_locate_slots() const { return getcontext && init_local && step && get_reg; }
};

class NativeWalkCache {
 public:
  static constexpr uint32_t kMaxFrames = 64;
  static constexpr uint32_t kVariants = 16;     // stacks kept per frame address
  static constexpr uint32_t kMaxSites = 512;    // frame addresses kept per thread
  static constexpr uint32_t kMaxStacks = 2048;  // stacks kept per thread (~1.6 MB)
  static constexpr uint32_t kRecheck = 64;      // every kRecheck-th hit walks and compares

  struct Stats {
    uint64_t hits = 0;        // remembered stacks returned
    uint64_t walks = 0;       // unw_backtrace calls
    uint64_t fills = 0;       // stacks remembered
    uint64_t rechecks = 0;    // hits walked anyway and compared
    uint64_t mismatches = 0;  // rechecks that differed (the address is walked from then on)
  };

  // Return addresses of the calling thread, innermost first, as
  // unw_backtrace(out, max) gives them. `stop_begin`/`stop_end`: the code at
  // which stacks end for the caller (the interpreter's); only walks that
  // reach it are remembered. With `enabled` false every call walks (same
  // frames: the walk is made from the same place).
  uint32_t capture(const Unwinder& u, uintptr_t* out, uint32_t max, uintptr_t stop_begin, uintptr_t stop_end);

  void set_enabled(bool on) { enabled_ = on; }
  const Stats& stats() const { return stats_; }
  // For tests: changes a remembered frame that the stack check does not
  // cover, as a stale entry would be, so that the recheck must find it.
  bool corrupt_for_test();

 private:
  struct Variant {
    uint32_t n = 0;        // frames returned; out[n - 1] is in the stop range
    uint32_t checked = 0;  // frames from this one on are checked on the stack
    uint32_t hits = 0;
    uintptr_t ips[kMaxFrames] = {};
    uint32_t offsets[kMaxFrames] = {};  // where ips[i] lies: frame address + offset
  };
  struct Site {
    uintptr_t frame = 0;
    bool always_walk = false;
    uint32_t n_variants = 0;
    uint32_t variants[kVariants] = {};  // indices into variants_
  };
  static constexpr uint32_t kTable = 2 * kMaxSites;  // power of two

  Site* find_site(uintptr_t frame, bool create);
  bool stack_bounds_hold(uintptr_t frame, uint32_t max_offset);

  bool enabled_ = true;
  Stats stats_;
  uint32_t table_[kTable] = {};  // site index + 1, open addressing
  std::vector<Site> sites_;
  std::vector<Variant> variants_;
  uintptr_t stack_lo_ = 0, stack_hi_ = 0;  // the thread's stack, read at the first fill
  bool stack_known_ = false;
};

}  // namespace ptprof::agent
