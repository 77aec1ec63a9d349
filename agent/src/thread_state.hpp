// Per-thread recording state and the hot path.
//
// A thread's first event registers it (Runtime::register_thread); after that
// recording an event is: a thread_local load, a flag load, an intern-cache
// probe (pointer compare + strcmp against the cached copy), a clock read, and
// a store of a fixed-size record into the thread's ring. No lock, no syscall,
// no allocation.
#pragma once
#include <cstdint>
#include <cstring>

#include "ptprof/clock.hpp"
#include "ptprof/record.hpp"
#include "ptprof/ring.hpp"
#include "runtime.hpp"

namespace ptprof::agent {

// The scopes (user scopes and ranges) open on a thread, each with the step in
// which it began. A step that ends inside a scope begun in the same step is
// held back until that scope ends (`pending_step_end`).
struct ScopeStack {
  static constexpr uint32_t kMax = 256;
  uint64_t began_in_step[kMax];
  uint32_t depth = 0;
  bool pending_step_end = false;

  void push(uint64_t step) {
    if (depth < kMax) began_in_step[depth] = step;
    ++depth;
  }
  void pop() {
    if (depth) --depth;
  }
  // Whether an open scope began in `step` (scopes nest, so the innermost
  // began last).
  bool inside_scope_of(uint64_t step) const {
    return depth && depth <= kMax && began_in_step[depth - 1] >= step;
  }
};

struct ThreadState {
  static constexpr uint32_t kCacheSize = 256;  // power of two
  static constexpr uint32_t kMaxDepth = 256;

  struct CacheEntry {
    const char* key = nullptr;   // the caller's pointer
    const char* text = nullptr;  // the arena's copy, to verify the content
    uint32_t id = 0;
  };

  wire::RingWriter ring;
  uint32_t slot = 0;
  int32_t tid = 0;
  bool busy = false;  // inside the agent's own slow path: do not record

  CacheEntry cache[kCacheSize];

  // Handles of operators whose begin this thread recorded, innermost last;
  // an end is written only for these.
  uint64_t ops[kMaxDepth];
  uint32_t op_depth = 0;
  // For each open range: whether its push was recorded, and its name id.
  uint32_t ranges[kMaxDepth];  // name id, or 0 when the push was not recorded
  uint32_t range_depth = 0;
  ScopeStack scopes;

  uint32_t intern(const char* s) {
    auto& e = cache[(reinterpret_cast<uintptr_t>(s) >> 4) & (kCacheSize - 1)];
    if (e.key == s && e.text && std::strcmp(s, e.text) == 0) [[likely]]
      return e.id;
    const char* text = nullptr;
    uint32_t id = g_runtime.intern(s, &text);
    if (id) e = CacheEntry{s, text, id};
    return id;
  }

  uint64_t now() const { return clock::ticks(g_runtime.clock_kind()); }

  // A header-only record (16 bytes).
  void write(wire::RecordType type, uint32_t arg, uint64_t ts) {
    uint8_t* p = ring.reserve(sizeof(wire::RecordHeader));
    if (!p) [[unlikely]] return;
    auto* h = reinterpret_cast<wire::RecordHeader*>(p);
    h->type = static_cast<uint16_t>(type);
    h->size = sizeof(wire::RecordHeader);
    h->arg = arg;
    h->ts = ts;
    ring.commit(sizeof(wire::RecordHeader));
  }
  bool try_write(wire::RecordType type, uint32_t arg, uint64_t ts) {
    uint8_t* p = ring.reserve(sizeof(wire::RecordHeader));
    if (!p) [[unlikely]] return false;
    auto* h = reinterpret_cast<wire::RecordHeader*>(p);
    h->type = static_cast<uint16_t>(type);
    h->size = sizeof(wire::RecordHeader);
    h->arg = arg;
    h->ts = ts;
    ring.commit(sizeof(wire::RecordHeader));
    return true;
  }
};

namespace detail {
extern thread_local ThreadState* tls_thread;
}

// The calling thread's state, registering it on first use; null when the
// agent is inert, the thread could not be registered, or the agent itself is
// running on this thread (re-entry from a hook).
inline ThreadState* thread_state() {
  ThreadState* t = detail::tls_thread;
  if (t) [[likely]]
    return t->busy ? nullptr : t;
  if (!g_runtime.active()) return nullptr;
  return g_runtime.register_thread();
}

// Clears the calling thread's pointer (fork child: its state belonged to the
// parent's region).
inline void forget_thread_state() { detail::tls_thread = nullptr; }

}  // namespace ptprof::agent
