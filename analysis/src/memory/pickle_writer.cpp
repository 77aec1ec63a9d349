// pickle_writer.hpp: the opcodes of Python's Lib/pickle.py that plain values need.
#include "memory/pickle_writer.hpp"

#include <bit>

namespace ptprof::memory::pickle {

namespace {

constexpr char kProto = '\x80', kStop = '.', kNone = 'N', kNewTrue = '\x88', kNewFalse = '\x89';
constexpr char kBinInt = 'J', kLong1 = '\x8a', kBinFloat = 'G';
constexpr char kShortBinUnicode = '\x8c', kBinUnicode = 'X';
constexpr char kEmptyList = ']', kEmptyDict = '}', kMark = '(', kAppends = 'e', kSetItems = 'u';
constexpr size_t kBatch = 1000;  // pickle's own batch size for APPENDS/SETITEMS

void little_endian(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += char((v >> (8 * i)) & 0xff);
}

// BININT for what fits in 32 bits, else LONG1: the two's-complement
// little-endian bytes, as few as keep the sign.
void integer(std::string& out, int64_t i) {
  if (i >= INT32_MIN && i <= INT32_MAX) {
    out += kBinInt;
    little_endian(out, uint64_t(uint32_t(int32_t(i))), 4);
    return;
  }
  std::string bytes;
  const bool negative = i < 0;
  uint64_t v = uint64_t(i);
  // At most 8 bytes: the eighth holds the sign whatever it is (and a shift
  // by 64 below would be undefined).
  for (int n = 0; n < 8; ++n) {
    bytes += char(v & 0xff);
    if (n == 7) break;
    v >>= 8;
    const bool sign = (uint8_t(bytes.back()) & 0x80) != 0;
    if ((negative && v == (UINT64_MAX >> (8 * (n + 1))) && sign) || (!negative && v == 0 && !sign)) break;
  }
  out += kLong1;
  out += char(bytes.size());
  out += bytes;
}

void unsigned_integer(std::string& out, uint64_t u) {
  if (u <= uint64_t(INT64_MAX)) return integer(out, int64_t(u));
  out += kLong1;
  out += char(9);
  little_endian(out, u, 8);
  out += char(0);  // positive
}

void pickle_text(std::string& out, const std::string& s) {
  if (s.size() < 256) {
    out += kShortBinUnicode;
    out += char(s.size());
  } else {
    out += kBinUnicode;
    little_endian(out, s.size(), 4);
  }
  out += s;
}

void write(std::string& out, const Value& value);

template <class Items, class Each>
void batched(std::string& out, const Items& items, char op, Each each) {
  for (size_t i = 0; i < items.size(); i += kBatch) {
    out += kMark;
    for (size_t j = i; j < items.size() && j < i + kBatch; ++j) each(items[j]);
    out += op;
  }
}

void write(std::string& out, const Value& value) {
  struct Visitor {
    std::string& out;
    void operator()(std::monostate) const { out += kNone; }
    void operator()(bool b) const { out += b ? kNewTrue : kNewFalse; }
    void operator()(int64_t i) const { integer(out, i); }
    void operator()(uint64_t u) const { unsigned_integer(out, u); }
    void operator()(double d) const {
      out += kBinFloat;  // big-endian
      const uint64_t bits = std::bit_cast<uint64_t>(d);
      for (int i = 7; i >= 0; --i) out += char((bits >> (8 * i)) & 0xff);
    }
    void operator()(const std::string& s) const { pickle_text(out, s); }
    void operator()(const List& l) const {
      out += kEmptyList;
      batched(out, l, kAppends, [&](const Value& v) { write(out, v); });
    }
    void operator()(const Dict& d) const {
      out += kEmptyDict;
      batched(out, d, kSetItems, [&](const std::pair<std::string, Value>& kv) {
        pickle_text(out, kv.first);
        write(out, kv.second);
      });
    }
  };
  std::visit(Visitor{out}, value.v);
}

}  // namespace

std::string dumps(const Value& root) {
  std::string out;
  out += kProto;
  out += char(4);
  write(out, root);
  out += kStop;
  return out;
}

}  // namespace ptprof::memory::pickle
