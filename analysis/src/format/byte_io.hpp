// Primitive encodings of the trace format: little-endian fixed integers,
// LEB128 varints and zigzag (ptprof/varint.hpp's). The decoding side is a
// bounds-checked cursor because every byte it reads comes from a file we do
// not trust.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "ptprof/varint.hpp"

namespace ptprof::format::detail {

using varint::unzigzag;
using varint::zigzag;

inline void put_u32(std::string& out, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = char(v >> (8 * i));
  out.append(b, 4);
}

inline void put_varint(std::string& out, uint64_t v) { varint::append(out, v); }

inline void put_svarint(std::string& out, int64_t v) { put_varint(out, zigzag(v)); }

inline void put_bytes(std::string& out, std::string_view s) {
  put_varint(out, s.size());
  out.append(s);
}

inline uint32_t get_u32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// Reads from [data, data + size). Any read past the end, or a varint longer
// than 10 bytes or overflowing 64 bits, sets `ok = false` and yields zeros, so
// decoders can read a whole record and check once.
class Cursor {
 public:
  Cursor() = default;
  Cursor(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}

  bool ok() const { return ok_; }
  bool at_end() const { return p_ == end_; }
  size_t remaining() const { return size_t(end_ - p_); }

  uint64_t varint() {
    // Fast path: the common one-byte value.
    if (p_ < end_ && *p_ < 0x80) [[likely]]
      return *p_++;
    uint64_t v = 0;
    return varint::read(p_, end_, v) ? v : fail();
  }

  int64_t svarint() { return unzigzag(varint()); }

  // A varint that must fit in 32 bits (indices, counts).
  uint32_t varint32() {
    uint64_t v = varint();
    if (v > UINT32_MAX) return uint32_t(fail());
    return uint32_t(v);
  }

  std::string_view bytes(size_t n) {
    if (n > remaining()) {
      fail();
      return {};
    }
    std::string_view s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }

  // A length-prefixed string.
  std::string_view str() {
    uint64_t n = varint();
    if (!ok_) return {};
    return bytes(n > remaining() ? remaining() + 1 : size_t(n));
  }

  // Splits off the next n bytes as their own cursor.
  Cursor sub(size_t n) {
    std::string_view s = bytes(n);
    return Cursor(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  }

 private:
  uint64_t fail() {
    ok_ = false;
    p_ = end_;
    return 0;
  }
  const uint8_t* p_ = nullptr;
  const uint8_t* end_ = nullptr;
  bool ok_ = true;
};

}  // namespace ptprof::format::detail
