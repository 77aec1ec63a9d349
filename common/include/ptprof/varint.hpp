// LEB128 varints and zigzag, the one encoding of every variable-length integer
// ptprof writes: the trace file's columns and chunks, the input shapes the
// torch bridge encodes on the hot path, Perfetto's protobuf. Header-only and
// allocation-free so that the agent can use it; the readers are bounds-checked
// because what they read comes from a file that is never trusted.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace ptprof::varint {

// Worst-case bytes of one varint (a uint64_t).
inline constexpr size_t kMaxBytes = 10;

inline constexpr uint64_t zigzag(int64_t v) noexcept { return (uint64_t(v) << 1) ^ uint64_t(v >> 63); }
inline constexpr int64_t unzigzag(uint64_t v) noexcept { return int64_t(v >> 1) ^ -int64_t(v & 1); }

// Bytes of v's encoding.
inline constexpr size_t size(uint64_t v) noexcept {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Writes v at p, which must have room for size(v) bytes; returns the byte after it.
inline uint8_t* write(uint8_t* p, uint64_t v) noexcept {
  while (v >= 0x80) {
    *p++ = uint8_t(v | 0x80);
    v >>= 7;
  }
  *p++ = uint8_t(v);
  return p;
}

inline void append(std::string& out, uint64_t v) {
  uint8_t b[kMaxBytes];
  out.append(reinterpret_cast<const char*>(b), size_t(write(b, v) - b));
}

// Reads the varint at [p, end) into `out` and moves p past it. False when it
// runs past `end` or does not fit 64 bits (more than ten bytes, or a tenth
// byte above 1); p is then past the bytes looked at.
inline bool read(const uint8_t*& p, const uint8_t* end, uint64_t& out) noexcept {
  out = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p == end) return false;
    const uint8_t b = *p++;
    if (shift == 63 && b > 1) return false;
    out |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

}  // namespace ptprof::varint
