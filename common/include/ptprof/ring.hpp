// Single-producer / single-consumer byte ring living in shared memory.
//
// The producer is one thread of the target; the consumer is the launcher.
// Positions are 64-bit byte counters that never wrap; the slot is pos & mask.
// A record never straddles the end of the buffer: when it does not fit in the
// contiguous space left, the producer writes a Pad record covering that space
// and starts again at offset 0. A record that does not fit at all is dropped
// and counted; the producer never waits.
//
// Begin/end pairs (ranges, operators): a begin is written only if the ring
// also has room for its end, and that room stays set aside until the end is
// written, so an end whose begin was recorded is never dropped (a dropped end
// would make the launcher close the wrong span). A refused begin is the one
// drop counted for the pair: recorded + dropped counts each pair once.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ptprof/check.hpp"
#include "ptprof/record.hpp"

namespace ptprof::wire {

struct alignas(64) RingControl {
  // Written by the producer only.
  std::atomic<uint64_t> head{0};     // bytes committed
  std::atomic<uint64_t> dropped{0};  // events dropped because the ring was full
  char producer_pad[64 - 16];
  // Written by the consumer only.
  std::atomic<uint64_t> tail{0};  // bytes consumed
  char consumer_pad[64 - 8];
};
static_assert(sizeof(RingControl) == 128);
static_assert(offsetof(RingControl, head) == 0 && offsetof(RingControl, dropped) == 8 &&
              offsetof(RingControl, tail) == 64);
static_assert(std::atomic<uint64_t>::is_always_lock_free, "ring positions are shared between processes");

constexpr bool is_power_of_two(uint64_t n) { return n != 0 && (n & (n - 1)) == 0; }

// Producer side. Lives in the writer thread's private memory; only `ctl` and
// `data` point into shared memory. Cached positions keep the fast path free of
// reads of the consumer's cache line.
class RingWriter {
 public:
  RingWriter() = default;
  RingWriter(RingControl* ctl, uint8_t* data, uint64_t capacity)
      : ctl_(ctl),
        data_(data),
        mask_(capacity - 1),
        capacity_(capacity),
        head_(ctl->head.load(std::memory_order_relaxed)),
        tail_cache_(ctl->tail.load(std::memory_order_acquire)),
        dropped_(ctl->dropped.load(std::memory_order_relaxed)) {
    PTPROF_DCHECK(is_power_of_two(capacity));
  }

  bool valid() const { return ctl_ != nullptr; }

  // Returns where to write `bytes` (multiple of 8, <= kMaxRecordBytes), or
  // nullptr when the ring is full (the event is then counted as dropped).
  // A non-null reservation must be followed by commit(bytes).
  inline uint8_t* reserve(uint32_t bytes) { return reserve_keeping(bytes, held_); }

  // A begin record whose end, `end_bytes` long, will follow: reserved only
  // if the end fits too, and the end's room is then held until end().
  inline uint8_t* reserve_begin(uint32_t bytes, uint32_t end_bytes) {
    const uint64_t pending = pending_ends_ + end_bytes;
    uint8_t* p = reserve_keeping(bytes, pending + kWrapSlack);
    if (p) set_pending(pending);
    return p;
  }
  // The end of a begin that reserve_begin() accepted: uses the room held for
  // it, so it does not fail while the consumer only ever frees space.
  inline uint8_t* reserve_end(uint32_t bytes) {
    PTPROF_DCHECK(bytes <= pending_ends_);
    set_pending(pending_ends_ - bytes);
    return reserve_keeping(bytes, 0);
  }
  // The end of an accepted begin will not be written after all.
  inline void release_end(uint32_t bytes) {
    PTPROF_DCHECK(bytes <= pending_ends_);
    set_pending(pending_ends_ - bytes);
  }
  uint64_t held() const { return held_; }

 private:
  // One end may wrap the buffer and waste up to its own size less 8 bytes.
  static constexpr uint64_t kWrapSlack = 24;

  void set_pending(uint64_t pending) {
    pending_ends_ = pending;
    held_ = pending ? pending + kWrapSlack : 0;
  }

  // reserve() that leaves `keep` bytes free after the record.
  inline uint8_t* reserve_keeping(uint32_t bytes, uint64_t keep) {
    PTPROF_DCHECK(bytes % 8 == 0 && bytes >= sizeof(RecordHeader) && bytes <= kMaxRecordBytes);
    uint64_t pos = head_ & mask_;
    uint64_t contiguous = capacity_ - pos;
    uint64_t need = (bytes <= contiguous ? bytes : contiguous + bytes) + keep;
    if (head_ + need - tail_cache_ > capacity_) [[unlikely]] {
      tail_cache_ = ctl_->tail.load(std::memory_order_acquire);
      if (head_ + need - tail_cache_ > capacity_) {
        ctl_->dropped.store(++dropped_, std::memory_order_relaxed);
        return nullptr;
      }
    }
    if (bytes > contiguous) [[unlikely]] {
      auto* pad = reinterpret_cast<RecordHeader*>(data_ + pos);
      // Only the first 8 bytes are guaranteed to fit; a Pad of size 0 always
      // runs to the end of the buffer.
      pad->type = static_cast<uint16_t>(RecordType::Pad);
      pad->size = 0;
      pad->arg = 0;
      head_ += contiguous;
      pos = 0;
    }
    return data_ + pos;
  }

 public:
  inline void commit(uint32_t bytes) {
    head_ += bytes;
    ctl_->head.store(head_, std::memory_order_release);
  }

  // Counts an event the caller could not even try to write.
  inline void count_drop() { ctl_->dropped.store(++dropped_, std::memory_order_relaxed); }

  uint64_t dropped() const { return dropped_; }

 private:
  RingControl* ctl_ = nullptr;
  uint8_t* data_ = nullptr;
  uint64_t mask_ = 0;
  uint64_t capacity_ = 0;
  uint64_t head_ = 0;
  uint64_t tail_cache_ = 0;
  uint64_t dropped_ = 0;
  uint64_t pending_ends_ = 0;  // bytes of ends whose begins were written
  uint64_t held_ = 0;          // bytes every other record must leave free
};

// Consumer side. `visit(const RecordHeader&)` is called for each committed
// record in order; it returns false to stop before consuming that record (the
// record stays in the ring for the next call). Returns the records consumed.
class RingReader {
 public:
  RingReader() = default;
  RingReader(RingControl* ctl, const uint8_t* data, uint64_t capacity)
      : ctl_(ctl), data_(data), mask_(capacity - 1), capacity_(capacity) {
    PTPROF_DCHECK(is_power_of_two(capacity));
  }

  bool valid() const { return ctl_ != nullptr; }

  uint64_t dropped() const { return ctl_->dropped.load(std::memory_order_relaxed); }
  bool empty() const {
    return ctl_->head.load(std::memory_order_acquire) == ctl_->tail.load(std::memory_order_relaxed);
  }

  // A corrupt record (size 0 or past the committed head, not 8-aligned)
  // makes drain() skip the rest of what is committed and count it in
  // corrupt_bytes(), so a misbehaving target cannot wedge the launcher.
  // So do positions no producer can make, as both live in shared memory: a
  // head more than a ring ahead of the tail (it would be read round and
  // round, for ever) or a tail off the 8-byte grid (records are aligned).
  template <class Visit>
  uint64_t drain(Visit&& visit) {
    uint64_t tail = ctl_->tail.load(std::memory_order_relaxed);
    const uint64_t head = ctl_->head.load(std::memory_order_acquire);
    if (tail < head && (head - tail > capacity_ || (tail & 7u))) {
      corrupt_bytes_ += std::min(head - tail, capacity_);
      ctl_->tail.store(head, std::memory_order_release);
      return 0;
    }
    uint64_t n = 0;
    while (tail < head) {
      uint64_t pos = tail & mask_;
      const auto* h = reinterpret_cast<const RecordHeader*>(data_ + pos);
      if (h->type == static_cast<uint16_t>(RecordType::Pad) && h->size == 0) {
        tail += capacity_ - pos;
        continue;
      }
      uint32_t size = h->size;
      if (size < sizeof(RecordHeader) || (size & 7u) || pos + size > capacity_ || tail + size > head) {
        corrupt_bytes_ += head - tail;
        tail = head;
        break;
      }
      if (!visit(*h)) break;
      tail += size;
      ++n;
    }
    ctl_->tail.store(tail, std::memory_order_release);
    return n;
  }

  // The bytes drain() skipped as corrupt, over this reader's life.
  uint64_t corrupt_bytes() const { return corrupt_bytes_; }

 private:
  RingControl* ctl_ = nullptr;
  const uint8_t* data_ = nullptr;
  uint64_t mask_ = 0;
  uint64_t capacity_ = 0;
  uint64_t corrupt_bytes_ = 0;
};

}  // namespace ptprof::wire
