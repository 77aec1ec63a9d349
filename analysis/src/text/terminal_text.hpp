// Names as a terminal may show them. Names come from the profiled program
// and may hold what a terminal acts on instead of showing: escape sequences
// (colours, cursor moves, a changed title), bidirectional controls that
// reorder what follows (a "Trojan Source" row), newlines that forge rows,
// bytes that are not UTF-8. The text report writes each of them as a visible
// escape: \xNN for a byte below 0x20, DEL or invalid UTF-8, \uNNNN for a C1
// control or a bidirectional control.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "text/utf8.hpp"

namespace ptprof::text {

// Whether the code point of a valid UTF-8 sequence is one a terminal acts on:
// a C1 control (U+0080-U+009F) or a bidirectional control.
inline bool is_terminal_control(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

inline uint32_t utf8_code_point(std::string_view seq) {
  const auto b = [&](size_t k) { return uint32_t(static_cast<unsigned char>(seq[k])); };
  switch (seq.size()) {
    case 1:
      return b(0);
    case 2:
      return (b(0) & 0x1F) << 6 | (b(1) & 0x3F);
    case 3:
      return (b(0) & 0x0F) << 12 | (b(1) & 0x3F) << 6 | (b(2) & 0x3F);
    default:
      return (b(0) & 0x07) << 18 | (b(1) & 0x3F) << 12 | (b(2) & 0x3F) << 6 | (b(3) & 0x3F);
  }
}

// `s` with every control, bidirectional control and invalid byte escaped;
// `keep_newlines`: a '\n' stays (the report's own line breaks).
inline std::string terminal_text(std::string_view s, bool keep_newlines = false) {
  std::string out;
  out.reserve(s.size());
  char buf[16];
  const auto escape_byte = [&](unsigned char c) {
    std::snprintf(buf, sizeof buf, "\\x%02x", c);
    out += buf;
  };
  for_each_utf8_sequence(
      s,
      [&](std::string_view seq) {
        const uint32_t cp = utf8_code_point(seq);
        if (cp == '\n' && keep_newlines) {
          out += '\n';
        } else if (cp < 0x20 || cp == 0x7F) {
          escape_byte(static_cast<unsigned char>(cp));
        } else if (is_terminal_control(cp)) {
          std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(cp));
          out += buf;
        } else {
          out += seq;
        }
      },
      escape_byte);
  return out;
}

}  // namespace ptprof::text
