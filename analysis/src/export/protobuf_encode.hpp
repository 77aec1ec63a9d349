// The few protobuf wire-format primitives the Perfetto export needs
// (varint, length-delimited, fixed64; varints are ptprof/varint.hpp's), appended to a std::string. Nested
// messages are encoded into their own buffer and appended as bytes.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "ptprof/varint.hpp"

namespace ptprof::exporting::detail::pb {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };

inline void put_tag(std::string& out, uint32_t field, WireType type) {
  varint::append(out, (uint64_t(field) << 3) | type);
}

// uint32/uint64/enum/bool fields; int32/int64 too (negative values take ten
// bytes, as protobuf encodes them).
inline void put_varint(std::string& out, uint32_t field, uint64_t v) {
  put_tag(out, field, kVarint);
  varint::append(out, v);
}

inline void put_bytes(std::string& out, uint32_t field, std::string_view bytes) {
  put_tag(out, field, kLengthDelimited);
  varint::append(out, bytes.size());
  out.append(bytes);
}

inline void put_fixed64(std::string& out, uint32_t field, uint64_t v) {
  put_tag(out, field, kFixed64);
  for (int i = 0; i < 8; ++i) out += char(uint8_t(v >> (8 * i)));
}

}  // namespace ptprof::exporting::detail::pb
