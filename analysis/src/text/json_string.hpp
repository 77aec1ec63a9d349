// The one JSON string escaper of every JSON ptprof writes (the report and its
// sections, the diff, the Chrome export): a strict parser accepts what it
// writes whatever the bytes of the name.
#pragma once
#include <string>
#include <string_view>

#include "text/utf8.hpp"

namespace ptprof::text {

// Appends s as a JSON string literal: quotes and backslashes escaped, control
// characters (and DEL) as \n, \t or \u00XX, invalid UTF-8 as \ufffd.
inline void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  auto ascii = [&](unsigned char c) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else {
          out += char(c);
        }
    }
  };
  for_each_utf8_sequence(
      s,
      [&](std::string_view sequence) {
        if (sequence.size() == 1)
          ascii(static_cast<unsigned char>(sequence[0]));
        else
          out.append(sequence);
      },
      [&](unsigned char) { out += "\\ufffd"; });
  out += '"';
}

inline std::string json_string(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  append_json_string(out, s);
  return out;
}

}  // namespace ptprof::text
