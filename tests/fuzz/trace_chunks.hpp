// Chunk framing of a trace file (docs/format.md), for the fuzz harness and
// its seed maker: checksums are recomputed so that mutated payloads get past
// them to the decoders, and compressed chunks are stored uncompressed so
// that the fuzzer mutates what the decoders read rather than zstd frames.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

#include "format/crc32c.hpp"
#include "format/format_layout.hpp"

namespace ptprof::fuzz {

inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v = 0;
  std::memcpy(&v, p, 4);
  return v;
}
inline void store_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }

// Calls `each(uint8_t* head, uint8_t* payload, uint32_t stored)` for every
// chunk whose header and payload lie inside `bytes`, in order.
template <class Each>
void for_each_chunk(std::string& bytes, Each&& each) {
  using namespace format::detail;
  size_t at = kPreambleBytes;
  while (bytes.size() >= kChunkHeaderBytes && at <= bytes.size() - kChunkHeaderBytes) {
    auto* head = reinterpret_cast<uint8_t*>(bytes.data() + at);
    const uint32_t stored = load_u32(head + 8);
    if (stored > bytes.size() - at - kChunkHeaderBytes) return;
    each(head, head + kChunkHeaderBytes, stored);
    at += kChunkHeaderBytes + stored;
  }
}

// Makes every chunk's payload and header checksums right.
inline void repair_checksums(std::string& bytes) {
  for_each_chunk(bytes, [](uint8_t* head, uint8_t* payload, uint32_t stored) {
    store_u32(head + 16, format::detail::crc32c(payload, stored));
    store_u32(head + 20, format::detail::crc32c(head, 20));
  });
}

}  // namespace ptprof::fuzz
