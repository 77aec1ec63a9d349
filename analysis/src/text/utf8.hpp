// UTF-8 as the outputs need it. Names in traces come from the profiled
// program (record_function names, thread names, command lines) and are not
// guaranteed to be UTF-8, while the formats ptprof writes (JSON, HTML,
// Perfetto's protobuf strings) must be: one invalid byte can make a strict
// reader reject a whole file.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace ptprof::text {

// Length of the valid UTF-8 sequence at s[i], or 0 when the bytes there are
// not one (overlong forms, surrogates and code points past U+10FFFF included).
inline size_t utf8_sequence_length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  const size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (n == 0 || c > 0xF4 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  const unsigned char c1 = byte(i + 1);
  if (c == 0xE0 && c1 < 0xA0) return 0;   // overlong
  if (c == 0xED && c1 >= 0xA0) return 0;  // surrogate
  if (c == 0xF0 && c1 < 0x90) return 0;   // overlong
  if (c == 0xF4 && c1 >= 0x90) return 0;  // past U+10FFFF
  return n;
}

// The replacement character, for a byte that begins no valid sequence.
inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Calls each(sequence) for every valid sequence of s in order, and
// invalid(byte) for every byte that begins none.
template <class Each, class Invalid>
void for_each_utf8_sequence(std::string_view s, Each&& each, Invalid&& invalid) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      invalid(static_cast<unsigned char>(s[i++]));
    } else {
      each(s.substr(i, n));
      i += n;
    }
  }
}

// s with every invalid byte replaced by U+FFFD.
inline std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for_each_utf8_sequence(
      s, [&](std::string_view sequence) { out.append(sequence); }, [&](unsigned char) { out.append(kReplacement); });
  return out;
}

// Width in code points, as Python's len() counts them.
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

}  // namespace ptprof::text
