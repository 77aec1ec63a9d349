// The one way a record gets into a ring: reserve, fill the header, copy the
// fixed payload and the variable tail, commit (Tracy's prepare/write/commit).
// The agent's hot path and the tests' synthetic rings both write through it.
#pragma once
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

#include "ptprof/check.hpp"
#include "ptprof/record.hpp"
#include "ptprof/ring.hpp"

namespace ptprof::wire {

// The payload of a header-only record.
struct NoPayload {};

// How a record takes its room in the ring (RingWriter: begins hold room for
// their ends).
enum class Pairing : uint8_t {
  None,   // an instant or any record without an end
  Begin,  // a begin whose end of `end_bytes` will follow: refused unless the end fits too
  End,    // the end of an accepted begin: uses the room held for it
};
constexpr uint32_t kRangePopBytes = sizeof(RecordHeader);
constexpr uint32_t kOpEndBytes = align8(sizeof(RecordHeader) + sizeof(OpEndPayload));

// Writes one record; false when the ring was full (the ring counts the drop).
// The record is `sizeof(RecordHeader) + sizeof(Payload) + tail.size()`
// rounded up to 8; the bytes of the rounding are left as they were.
template <class Payload = NoPayload>
inline bool emit(RingWriter& ring, RecordType type, uint32_t arg, uint64_t ts, const Payload& payload = {},
                 std::span<const uint8_t> tail = {}, Pairing pairing = Pairing::None, uint32_t end_bytes = 0) {
  static_assert(std::is_trivially_copyable_v<Payload>);
  constexpr uint32_t kFixed = sizeof(RecordHeader) + (std::is_empty_v<Payload> ? 0 : sizeof(Payload));
  const uint32_t size = align8(kFixed + static_cast<uint32_t>(tail.size()));
  PTPROF_DCHECK(size <= kMaxRecordBytes);
  PTPROF_DCHECK(record_type_info(static_cast<uint16_t>(type)) != nullptr);
  PTPROF_DCHECK(size >= record_type_info(static_cast<uint16_t>(type))->min_size);
  uint8_t* p = pairing == Pairing::None    ? ring.reserve(size)
               : pairing == Pairing::Begin ? ring.reserve_begin(size, end_bytes)
                                           : ring.reserve_end(size);
  if (p == nullptr) [[unlikely]]
    return false;
  const RecordHeader header{static_cast<uint16_t>(type), static_cast<uint16_t>(size), arg, ts};
  std::memcpy(p, &header, sizeof header);
  if constexpr (!std::is_empty_v<Payload>) std::memcpy(p + sizeof header, &payload, sizeof payload);
  if (!tail.empty()) std::memcpy(p + kFixed, tail.data(), tail.size());
  ring.commit(size);
  return true;
}

}  // namespace ptprof::wire
