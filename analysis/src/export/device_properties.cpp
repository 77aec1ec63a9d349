#include "export/device_properties.hpp"

#include <charconv>
#include <climits>
#include <cstdint>

#include "text/json_string.hpp"

namespace ptprof::exporting::detail {

namespace {

// A JSON reader of exactly what a deviceProperties entry is: one object
// whose values are scalars.
class FlatJsonReader {
 public:
  explicit FlatJsonReader(std::string_view s) : s_(s) {}

  void space() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n' || s_[at_] == '\r')) ++at_;
  }
  bool take(char c) {
    space();
    if (at_ >= s_.size() || s_[at_] != c) return false;
    ++at_;
    return true;
  }
  bool peek(char c) {
    space();
    return at_ < s_.size() && s_[at_] == c;
  }
  bool done() {
    space();
    return at_ == s_.size();
  }

  // A string literal, unescaped into `out` (\u escapes of surrogates, which
  // a device name never needs, as U+FFFD).
  bool string(std::string& out) {
    out.clear();
    if (!take('"')) return false;
    while (at_ < s_.size() && s_[at_] != '"') {
      const unsigned char c = static_cast<unsigned char>(s_[at_++]);
      if (c < 0x20) return false;
      if (c != '\\') {
        out += char(c);
        continue;
      }
      if (at_ >= s_.size()) return false;
      const char e = s_[at_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned v = 0;
          if (at_ + 4 > s_.size()) return false;
          const auto r = std::from_chars(s_.data() + at_, s_.data() + at_ + 4, v, 16);
          if (r.ptr != s_.data() + at_ + 4) return false;
          at_ += 4;
          append_code_point(out, v >= 0xD800 && v <= 0xDFFF ? 0xFFFD : v);
          break;
        }
        default:
          return false;
      }
    }
    return take('"');
  }

  // A number as JSON writes one (its text, checked), or true/false/null.
  bool literal(std::string_view& text) {
    space();
    const size_t start = at_;
    for (std::string_view word : {"true", "false", "null"})
      if (s_.substr(at_, word.size()) == word) {
        at_ += word.size();
        text = s_.substr(start, word.size());
        return true;
      }
    if (at_ < s_.size() && s_[at_] == '-') ++at_;
    if (at_ < s_.size() && s_[at_] == '0') {
      ++at_;
    } else if (!digits()) {
      return false;
    }
    if (at_ < s_.size() && s_[at_] == '.') {
      ++at_;
      if (!digits()) return false;
    }
    if (at_ < s_.size() && (s_[at_] == 'e' || s_[at_] == 'E')) {
      ++at_;
      if (at_ < s_.size() && (s_[at_] == '+' || s_[at_] == '-')) ++at_;
      if (!digits()) return false;
    }
    text = s_.substr(start, at_ - start);
    return true;
  }

 private:
  bool digits() {
    const size_t start = at_;
    while (at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9') ++at_;
    return at_ > start;
  }
  static void append_code_point(std::string& out, unsigned v) {
    if (v < 0x80) {
      out += char(v);
    } else if (v < 0x800) {
      out += char(0xC0 | (v >> 6));
      out += char(0x80 | (v & 0x3F));
    } else {
      out += char(0xE0 | (v >> 12));
      out += char(0x80 | ((v >> 6) & 0x3F));
      out += char(0x80 | (v & 0x3F));
    }
  }

  std::string_view s_;
  size_t at_ = 0;
};

// The calculator's fields, in OccupancyDevice's order.
constexpr std::string_view kLimitKeys[] = {"computeMajor",
                                           "computeMinor",
                                           "maxThreadsPerBlock",
                                           "maxThreadsPerMultiprocessor",
                                           "regsPerBlock",
                                           "regsPerMultiprocessor",
                                           "warpSize",
                                           "sharedMemPerBlock",
                                           "sharedMemPerMultiprocessor",
                                           "numSms",
                                           "reservedSharedMemPerBlock"};
constexpr size_t kReservedKey = 10;

std::optional<OccupancyDevice> limits_of(const std::optional<int64_t> (&v)[std::size(kLimitKeys)]) {
  for (size_t i = 0; i < kReservedKey; ++i) {
    // A minor version may be 0; every other field is a positive count.
    if (!v[i] || *v[i] < (i == 1 ? 0 : 1) || *v[i] > INT_MAX) return std::nullopt;
  }
  OccupancyDevice d;
  d.compute_major = int(*v[0]);
  d.compute_minor = int(*v[1]);
  d.max_threads_per_block = int(*v[2]);
  d.max_threads_per_sm = int(*v[3]);
  d.regs_per_block = int(*v[4]);
  d.regs_per_sm = int(*v[5]);
  d.warp_size = int(*v[6]);
  d.shared_mem_per_block = uint64_t(*v[7]);
  d.shared_mem_per_sm = uint64_t(*v[8]);
  d.num_sms = int(*v[9]);
  const std::optional<int64_t>& reserved = v[kReservedKey];
  if (reserved && *reserved >= 0 && *reserved <= INT_MAX)
    d.reserved_shared_mem_per_block = uint64_t(*reserved);
  else
    d.reserved_shared_mem_per_block = d.compute_major >= 8 ? 1024 : 0;
  return d;
}

}  // namespace

std::optional<DeviceProperties> read_device_properties(std::string_view json) {
  FlatJsonReader in(json);
  DeviceProperties out;
  std::optional<int64_t> limits[std::size(kLimitKeys)];
  std::string key, value;
  if (!in.take('{')) return std::nullopt;
  out.json = "{";
  bool first = true;
  while (!in.peek('}')) {
    if (!first && !in.take(',')) return std::nullopt;
    if (!in.string(key) || !in.take(':')) return std::nullopt;
    if (!first) out.json += ',';
    first = false;
    text::append_json_string(out.json, key);
    out.json += ':';
    if (in.peek('"')) {
      if (!in.string(value)) return std::nullopt;
      text::append_json_string(out.json, value);
      continue;
    }
    std::string_view number;
    if (!in.literal(number)) return std::nullopt;
    out.json += number;
    for (size_t i = 0; i < std::size(kLimitKeys); ++i) {
      int64_t v = 0;
      const auto r = std::from_chars(number.data(), number.data() + number.size(), v);
      if (key == kLimitKeys[i] && r.ec == std::errc() && r.ptr == number.data() + number.size()) limits[i] = v;
    }
  }
  if (!in.take('}') || !in.done()) return std::nullopt;
  out.json += '}';
  out.limits = limits_of(limits);
  return out;
}

}  // namespace ptprof::exporting::detail
