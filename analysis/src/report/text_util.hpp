// Text helpers for the renderers: widths in code points, as Python's len()
// counts them, and escaping for CSV and JSON.
#pragma once
#include <cstdio>
#include <string>
#include <string_view>

namespace ptprof::report::detail {

inline size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// The first `n` code points of s.
inline std::string_view utf8_prefix(std::string_view s, size_t n) {
  size_t i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (n == 0) break;
      --n;
    }
  }
  return s.substr(0, i);
}

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

inline std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
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
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  out += '"';
  return out;
}

inline std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace ptprof::report::detail
