// The string arena of a process region: the agent appends each name once,
// the launcher reads them in order. An entry is [u32 length][bytes][NUL]
// padded to 4 bytes; ids count from 1 in order of appearance, so the
// launcher's i-th entry is id i. The agent publishes an entry by storing the
// new `strings_committed` with release order after writing it.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "ptprof/check.hpp"
#include "ptprof/shm_abi.hpp"

namespace ptprof::wire {

// Longer names are cut. Templated kernels' names run to several KiB (5123
// bytes in tests/data/gpu-traces), and Kineto keeps them whole.
constexpr uint32_t kMaxNameBytes = 64 * 1024;

constexpr uint64_t arena_entry_bytes(uint64_t length) { return 4 + ((length + 1 + 3) & ~uint64_t(3)); }

// The agent's side. Not thread-safe: the caller serializes appends.
class StringArenaWriter {
 public:
  StringArenaWriter(ProcessHeader& header, uint8_t* arena) : header_(&header), arena_(arena) {}

  struct Entry {
    uint32_t id = 0;             // 0: the arena is full, nothing was written
    const char* text = nullptr;  // the arena's NUL-terminated copy
  };

  // Appends `s` (cut at kMaxNameBytes). A full arena counts the refusal in
  // the header's `strings_dropped` and returns id 0.
  Entry append(std::string_view s) {
    if (s.size() > kMaxNameBytes) s = s.substr(0, kMaxNameBytes);
    const uint64_t at = header_->strings_committed.load(std::memory_order_relaxed);
    const uint64_t need = arena_entry_bytes(s.size());
    if (at + need > header_->strings_capacity) {
      header_->strings_dropped.fetch_add(1, std::memory_order_relaxed);
      return {};
    }
    const auto length = static_cast<uint32_t>(s.size());
    std::memcpy(arena_ + at, &length, sizeof length);
    std::memcpy(arena_ + at + 4, s.data(), s.size());
    arena_[at + 4 + s.size()] = 0;
    const uint32_t id = header_->strings_count.load(std::memory_order_relaxed) + 1;
    // Ids count up from 1 in order of appearance: the launcher's i-th entry is id i.
    PTPROF_DCHECK(id == last_id_ + 1);
    last_id_ = id;
    header_->strings_count.store(id, std::memory_order_relaxed);
    header_->strings_committed.store(at + need, std::memory_order_release);
    return {id, reinterpret_cast<const char*>(arena_ + at + 4)};
  }

 private:
  ProcessHeader* header_;
  uint8_t* arena_;
  uint32_t last_id_ = 0;  // the last id this writer handed out
};

// The launcher's side: calls `each(std::string_view)` for every entry
// published since the last call, in id order.
class StringArenaReader {
 public:
  StringArenaReader(const ProcessHeader& header, const uint8_t* arena) : header_(&header), arena_(arena) {}

  template <class Each>
  void read_new(Each&& each) {
    const uint64_t committed =
        std::min(header_->strings_committed.load(std::memory_order_acquire), header_->strings_capacity);
    while (read_ + 4 <= committed) {
      uint32_t length = 0;
      std::memcpy(&length, arena_ + read_, sizeof length);
      const uint64_t next = read_ + arena_entry_bytes(length);
      if (next > committed) break;  // a damaged length: wait, never read past what is published
      each(std::string_view(reinterpret_cast<const char*>(arena_ + read_ + 4), length));
      read_ = next;
    }
  }

 private:
  const ProcessHeader* header_;
  const uint8_t* arena_;
  uint64_t read_ = 0;
};

}  // namespace ptprof::wire
