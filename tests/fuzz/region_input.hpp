// The fuzz_region input format, shared by the target and its seed maker: a
// process region described by the bytes it holds, as sparse segments.
//
//   [u8 flags][u64 horizon][segment]...     segment: [u32 offset][u16 length][bytes]
//
// Each segment's bytes are written at `offset` into a zeroed region of
// kRegionBytes (cut at its end). Unless kRawLayout is set, the header's
// magic, version and layout fields are then made valid (ring size 64..4096
// bytes, 0..4 threads) so that most inputs reach the decoder; with it, the
// header is left exactly as written and the launcher's validation decides.
// In every input the arena's published length is capped (cap_arena).
// All integers little-endian.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ptprof/shm_abi.hpp"

namespace ptprof::fuzz {

enum RegionFlags : uint8_t {
  kRawLayout = 1u << 0,       // do not repair the header's layout fields
  kTscClock = 1u << 1,        // convert ticks as TSC ticks (a fitted line), not ns
  kThroughSession = 1u << 2,  // register the region in a session and drain it with Collector
  kTwoRounds = 1u << 3,       // drain up to `horizon`, write ready windows, then finish
};

constexpr uint64_t kMaxFuzzRingBytes = 4096;
constexpr uint32_t kMaxFuzzThreads = 4;
constexpr uint64_t kMaxFuzzArenaBytes = 64 * 1024;
constexpr uint64_t kFuzzArenaCapacity = wire::kMinStringArenaBytes;  // the smallest region an agent may make
constexpr uint64_t kRegionBytes =
    (wire::region_layout(kMaxFuzzRingBytes, kMaxFuzzThreads, kFuzzArenaCapacity).total_bytes + wire::kPageBytes - 1) &
    ~(wire::kPageBytes - 1);
constexpr size_t kPreambleBytes = 1 + 8;
constexpr size_t kSegmentHeadBytes = 4 + 2;

struct Segment {
  uint32_t offset = 0;
  const uint8_t* bytes = nullptr;
  uint16_t length = 0;
};

struct RegionInput {
  uint8_t flags = 0;
  uint64_t horizon = 0;
  std::vector<Segment> segments;
};

// Parses what there is; a segment cut short keeps the bytes present.
inline RegionInput parse_region_input(const uint8_t* data, size_t size) {
  RegionInput in;
  if (size < kPreambleBytes) return in;
  in.flags = data[0];
  std::memcpy(&in.horizon, data + 1, 8);
  size_t at = kPreambleBytes;
  while (at + kSegmentHeadBytes <= size) {
    Segment s;
    std::memcpy(&s.offset, data + at, 4);
    std::memcpy(&s.length, data + at + 4, 2);
    at += kSegmentHeadBytes;
    s.bytes = data + at;
    if (s.length > size - at) s.length = uint16_t(size - at);
    at += s.length;
    in.segments.push_back(s);
  }
  return in;
}

// The inverse, for the seed maker.
inline void append_segment(std::vector<uint8_t>& out, uint32_t offset, const uint8_t* bytes, uint16_t length) {
  uint8_t head[kSegmentHeadBytes];
  std::memcpy(head, &offset, 4);
  std::memcpy(head + 4, &length, 2);
  out.insert(out.end(), head, head + sizeof head);
  out.insert(out.end(), bytes, bytes + length);
}

// The string arena's published length, capped at kMaxFuzzArenaBytes in
// every input: reading 16 MiB of names costs seconds an input under ASan and
// exercises nothing 64 KiB does not. (Not a layout field: the validation
// fuzzed with kRawLayout is unchanged.)
inline void cap_arena(wire::ProcessHeader& h) {
  h.strings_committed.store(std::min<uint64_t>(h.strings_committed.load(), kMaxFuzzArenaBytes));
}

// Makes the header's layout fields valid, keeping the ring size and thread
// count the input chose (reduced to what the fuzz region holds).
inline void repair_layout(wire::ProcessHeader& h) {
  h.magic = wire::kProcessMagic;
  h.version = wire::kWireVersion;
  uint32_t log2 = 6;
  while (log2 < 12 && (uint64_t(1) << log2) < h.ring_bytes) ++log2;
  h.ring_bytes = uint64_t(1) << log2;
  h.max_threads %= kMaxFuzzThreads + 1;
  const wire::RegionLayout l = wire::region_layout(h.ring_bytes, h.max_threads, kFuzzArenaCapacity);
  h.strings_offset = l.strings_offset;
  h.strings_capacity = l.strings_capacity;
  h.rings_offset = l.rings_offset;
}

}  // namespace ptprof::fuzz
