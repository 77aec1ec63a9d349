// Per-thread recording state and the hot path.
//
// A thread's first event registers it (register_calling_thread,
// services.hpp); after that
// recording an event is: a thread_local load, a flag load, an intern-cache
// probe (pointer compare + strcmp against the cached copy), a clock read, and
// a store of a fixed-size record into the thread's ring. No lock, no syscall,
// no allocation.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>

#include "base/bounded_stack.hpp"
#include "ptprof/clock.hpp"
#include "ptprof/record.hpp"
#include "ptprof/record_emit.hpp"
#include "ptprof/ring.hpp"
#include "record/cost_calibration.hpp"
#include "record/services.hpp"

namespace ptprof::agent {

// How deep a thread's operators, ranges and scopes are tracked; deeper
// levels are counted, not kept (base/bounded_stack.hpp).
inline constexpr uint32_t kMaxDepth = 256;

// An operator whose begin this thread recorded.
struct OpLevel {
  uint64_t handle = 0;
  bool pushed = false;  // its handle was pushed to CUPTI as external correlation id
  uint8_t scope = 0;    // wire::OpScope: Python attribution goes to ops called from Python
};

// What a layer above keeps per thread (the stack layer's StackCache): owned
// by the thread's state, which knows no more of it than how to free it.
struct ThreadCache {
  ThreadCache() = default;
  ThreadCache(const ThreadCache&) = delete;
  ThreadCache& operator=(const ThreadCache&) = delete;
  virtual ~ThreadCache() = default;
};

struct ThreadState {
  static constexpr uint32_t kCacheSize = 256;       // power of two
  static constexpr uint32_t kTextCacheSize = 1024;  // power of two; two ways per hash
  // Ends normally come innermost first; an end is looked for this many
  // levels down, for the rare scope that ends out of order.
  static constexpr uint32_t kEndReach = 4;

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
  // The session's clock (set at registration: constant for the process).
  clock::Kind clock = clock::Kind::Monotonic;
  uint32_t slot = 0;
  int32_t tid = 0;
  bool busy = false;  // inside the agent's own slow path: do not record
  // Operators whose begin this thread recorded: per step, for the cost
  // measured on the process's own steps (window/step_cost_meter.hpp).
  uint64_t ops_recorded = 0;

  CacheEntry cache[kCacheSize];
  TextEntry by_text[kTextCacheSize];

  // stacks/stack_capture.hpp's StackCache, made on the thread's first stack
  // (PTPROF_WITH_STACK, PTPROF_PYTHON_ATTRIBUTION).
  std::unique_ptr<ThreadCache> stacks;

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
    uint32_t id = intern_name(s, &text);
    way[1] = way[0];  // the newer name takes way 0
    if (id) {
      by_pointer = CacheEntry{s, text, id};
      way[0] = TextEntry{h, text, id, uint32_t(std::strlen(text))};  // the arena copy may be cut short
    } else {
      way[0] = TextEntry{h, nullptr, 0, uint32_t(n)};
    }
    return id;
  }

  uint64_t now() const { return clock::ticks(clock); }

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
  // A header-only record whose loss needs no handling: dropped when the ring
  // is full (and counted there).
  void emit_instant(wire::RecordType type, uint32_t arg, uint64_t ts) { (void)emit(type, arg, ts); }

  // Operators whose begin this thread recorded, innermost last; an end is
  // written only for these.
  bool ops_full() const { return ops_.full(); }
  // `op` opens a level; beyond kMaxDepth the level is counted, not kept.
  void push_op(const OpLevel& op) { (void)ops_.push(op); }
  // The innermost open operator, none when it is not kept or none is open.
  const OpLevel* innermost_op() const { return ops_.innermost(); }
  // The operator `handle` ended: its level, none when its begin was not kept.
  std::optional<OpLevel> pop_op(uint64_t handle) {
    return ops_.pop_matching([handle](const OpLevel& op) { return op.handle == handle; }, kEndReach);
  }

  // Ranges (the C API's, NVTX's) open on this thread, each with its name id
  // when its push was recorded (then its pop is written), else 0. A range is
  // also a scope.
  bool ranges_full() const { return ranges_.full(); }
  void push_range(uint32_t entry, uint64_t step) {
    (void)ranges_.push(entry);
    push_scope(step);
  }
  // The innermost range ended: its entry (0 beyond kMaxDepth), none when no
  // range is open.
  std::optional<uint32_t> pop_range() {
    if (ranges_.empty()) return std::nullopt;
    pop_scope();
    return ranges_.pop().value_or(0);
  }
  // Not inside any operator or range of its own.
  bool at_top_level() const { return ops_.empty() && ranges_.empty(); }

  // Scopes (torch's user scopes and the ranges) open on this thread, each
  // with the step in which it began. `step`: the current step.
  void push_scope(uint64_t step) { (void)scopes_.push(step); }
  void pop_scope() {
    // A scope that began before the bridge was loaded ends unseen-begun.
    if (!scopes_.empty()) (void)scopes_.pop();
  }
  // A scope ended (popped already); `ends_step`: its name ends a step. A
  // step that ends inside a scope begun in the same step is held back until
  // that scope ends (as torch's prof.step() after it would): true when the
  // step's end is due now.
  bool take_step_end(bool ends_step, uint64_t step) {
    pending_step_end_ |= ends_step;
    if (!pending_step_end_ || inside_scope_of(step)) return false;
    pending_step_end_ = false;
    return true;
  }

 private:
  // Whether an open scope began in `step` (scopes nest, so the innermost
  // began last).
  bool inside_scope_of(uint64_t step) const {
    const uint64_t* began = scopes_.innermost();
    return began && *began >= step;
  }

  BoundedStack<OpLevel, kMaxDepth> ops_;
  BoundedStack<uint32_t, kMaxDepth> ranges_;
  BoundedStack<uint64_t, kMaxDepth> scopes_;
  bool pending_step_end_ = false;
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
  if (!agent_active()) return nullptr;
  return register_calling_thread();
}

// Clears the calling thread's pointer (fork child: its state belonged to the
// parent's region).
inline void forget_thread_state() { detail::tls_thread = nullptr; }

}  // namespace ptprof::agent
