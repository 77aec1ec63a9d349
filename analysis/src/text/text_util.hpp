// Text helpers for the renderers: widths in code points, as Python's len()
// counts them, and escaping for CSV; JSON strings are text/json_string.hpp's.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "text/json_string.hpp"
#include "text/utf8.hpp"

namespace ptprof::text {

// Python's '{: >W}': right-aligned, never truncated.
inline void append_right(std::string& out, std::string_view s, size_t width) {
  size_t len = utf8_length(s);
  if (len < width) out.append(width - len, ' ');
  out.append(s);
}

inline std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

inline std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// Nanoseconds as the JSON outputs' microseconds, 3 decimals.
inline std::string us(int64_t ns) { return fixed(double(ns) / 1000.0, 3); }

}  // namespace ptprof::text
