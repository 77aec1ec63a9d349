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
#include <memory>
#include <span>

#include "cost_calibration.hpp"
#include "ptprof/clock.hpp"
#include "ptprof/record.hpp"
#include "ptprof/record_emit.hpp"
#include "ptprof/ring.hpp"
#include "runtime.hpp"
#include "stack_capture.hpp"

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
  bool inside_scope_of(uint64_t step) const { return depth && depth <= kMax && began_in_step[depth - 1] >= step; }
};

struct ThreadState {
  static constexpr uint32_t kCacheSize = 256;       // power of two
  static constexpr uint32_t kTextCacheSize = 1024;  // power of two; two ways per hash
  static constexpr uint32_t kMaxDepth = 256;

  struct CacheEntry {
    const char* key = nullptr;   // the caller's pointer
    const char* text = nullptr;  // the arena's copy, to verify the content
    uint32_t id = 0;
  };
  // Names that arrive in a new buffer every time (autograd node names and
  // user scopes are std::strings inside each RecordFunction) miss the pointer
  // cache; this one is keyed by the text's hash, so they still skip the
  // process-wide table and its mutex. It also remembers the names that the
  // full arena refused (id 0, no text: hash and length identify them), so a
  // lost name costs a hash per event, never the mutex.
  struct TextEntry {
    uint64_t hash = 0;
    const char* text = nullptr;  // null: a refused name
    uint32_t id = 0;
    uint32_t length = 0;

    bool matches(uint64_t h, const char* s, size_t n) const {
      return hash == h && length == n && (text == nullptr || std::memcmp(s, text, n) == 0);
    }
  };

  wire::RingWriter ring;
  uint32_t slot = 0;
  int32_t tid = 0;
  bool busy = false;  // inside the agent's own slow path: do not record

  CacheEntry cache[kCacheSize];
  TextEntry by_text[kTextCacheSize];

  // Handles of operators whose begin this thread recorded, innermost last;
  // an end is written only for these.
  uint64_t ops[kMaxDepth];
  bool ops_pushed[kMaxDepth];    // whether the op's handle was pushed to CUPTI as external correlation id
  uint8_t ops_scope[kMaxDepth];  // wire::OpScope of each: Python attribution goes to ops called from Python
  uint32_t op_depth = 0;
  // For each open range: whether its push was recorded, and its name id.
  uint32_t ranges[kMaxDepth];  // name id, or 0 when the push was not recorded
  uint32_t range_depth = 0;
  ScopeStack scopes;
  std::unique_ptr<StackCache> stacks;  // on the thread's first stack (PTPROF_WITH_STACK, PTPROF_PYTHON_ATTRIBUTION)

  // While the torch bridge times operators (cost_calibration.hpp): the
  // thread writes into a private ring and records whatever the schedule says.
  struct Calibration {
    ScratchRing scratch;
    wire::RingWriter saved;  // the thread's own ring, untouched meanwhile
  };
  std::unique_ptr<Calibration> calibration;

  uint32_t intern(const char* s) {
    auto& e = cache[(reinterpret_cast<uintptr_t>(s) >> 4) & (kCacheSize - 1)];
    if (e.key == s && e.text && std::strcmp(s, e.text) == 0) [[likely]]
      return e.id;
    return intern_by_text(s, e);
  }

  // A word-at-a-time hash: names run to 50 bytes (autograd node names), and
  // a byte-at-a-time hash pays a multiply's latency per byte.
  static uint64_t hash_text(const char* s, size_t n) {
    uint64_t h = uint64_t(n) * 0x9e3779b97f4a7c15ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, s + i, 8);
      h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
      h ^= h >> 31;
    }
    uint64_t w = 0;
    std::memcpy(&w, s + i, n - i);
    h = (h ^ w) * 0x94d049bb133111ebull;
    return h ^ (h >> 29);
  }

  uint32_t intern_by_text(const char* s, CacheEntry& by_pointer) {
    size_t n = std::strlen(s);
    uint64_t h = hash_text(s, n);
    TextEntry* way = &by_text[h & (kTextCacheSize - 2)];
    for (int i = 0; i < 2; ++i) {
      if (way[i].matches(h, s, n)) {
        if (way[i].text) by_pointer = CacheEntry{s, way[i].text, way[i].id};
        return way[i].id;
      }
    }
    const char* text = nullptr;
    uint32_t id = g_runtime.intern(s, &text);
    way[1] = way[0];  // the newer name takes way 0
    if (id) {
      by_pointer = CacheEntry{s, text, id};
      way[0] = TextEntry{h, text, id, uint32_t(std::strlen(text))};  // the arena copy may be cut short
    } else {
      way[0] = TextEntry{h, nullptr, 0, uint32_t(n)};
    }
    return id;
  }

  uint64_t now() const { return clock::ticks(g_runtime.clock_kind()); }

  // Writes one record into this thread's ring (wire::emit); false when the
  // ring was full.
  template <class Payload = wire::NoPayload>
  bool emit(wire::RecordType type, uint32_t arg, uint64_t ts, const Payload& payload = {},
            std::span<const uint8_t> tail = {}) {
    return wire::emit(ring, type, arg, ts, payload, tail);
  }
  // A begin, written only with room held for its end (wire::Pairing).
  template <class Payload = wire::NoPayload>
  bool emit_begin(wire::RecordType type, uint32_t arg, uint64_t ts, uint32_t end_bytes, const Payload& payload = {},
                  std::span<const uint8_t> tail = {}) {
    return wire::emit(ring, type, arg, ts, payload, tail, wire::Pairing::Begin, end_bytes);
  }
  // The end of a begin emit_begin() wrote: never dropped.
  template <class Payload = wire::NoPayload>
  void emit_end(wire::RecordType type, uint64_t ts, const Payload& payload = {}) {
    (void)wire::emit(ring, type, 0, ts, payload, {}, wire::Pairing::End);
  }
  // A header-only record whose loss needs no handling.
  void write(wire::RecordType type, uint32_t arg, uint64_t ts) { (void)emit(type, arg, ts); }
};

namespace detail {
// constinit: no dynamic initialization, so no TLS wrapper call on access.
extern constinit thread_local ThreadState* tls_thread;
}  // namespace detail

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
