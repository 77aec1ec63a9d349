#include "ptprof/shapes.hpp"

#include <array>

namespace ptprof::shapes {
namespace {

// c10::ScalarType order, with the names c10::TypeMeta gives them under GCC.
// 0..17 were printed by torch 1.13 (tests/integration/torch_shapes_probe.py);
// 18.. follow torch 2.x's ScalarType additions.
constexpr std::array<std::string_view, 30> kDtypeNames = {
    "unsigned char",            // Byte
    "signed char",              // Char
    "short int",                // Short
    "int",                      // Int
    "long int",                 // Long
    "c10::Half",                // Half
    "float",                    // Float
    "double",                   // Double
    "c10::complex<c10::Half>",  // ComplexHalf
    "c10::complex<float>",      // ComplexFloat
    "c10::complex<double>",     // ComplexDouble
    "bool",                     // Bool
    "c10::qint8",               // QInt8
    "c10::quint8",              // QUInt8
    "c10::qint32",              // QInt32
    "c10::BFloat16",            // BFloat16
    "c10::quint4x2",            // QUInt4x2
    "c10::quint2x4",            // QUInt2x4
    "c10::bits1x8",             // Bits1x8 (torch 2.x from here)
    "c10::bits2x4",             // Bits2x4
    "c10::bits4x2",             // Bits4x2
    "c10::bits8",               // Bits8
    "c10::bits16",              // Bits16
    "c10::Float8_e5m2",         // Float8_e5m2
    "c10::Float8_e4m3fn",       // Float8_e4m3fn
    "c10::Float8_e5m2fnuz",     // Float8_e5m2fnuz
    "c10::Float8_e4m3fnuz",     // Float8_e4m3fnuz
    "short unsigned int",       // UInt16
    "unsigned int",             // UInt32
    "long unsigned int",        // UInt64
};

// Bounds-checked reads over one encoding: a trace file is never trusted.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}

  bool at_end() const { return pos_ >= b_.size(); }
  size_t offset() const { return pos_; }

  bool byte(uint8_t& out) {
    if (pos_ >= b_.size()) return false;
    out = b_[pos_++];
    return true;
  }
  bool varint(uint64_t& out) {
    const uint8_t* p = b_.data() + pos_;
    const bool ok = varint::read(p, b_.data() + b_.size(), out);
    pos_ = size_t(p - b_.data());
    return ok;
  }

 private:
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
};

using varint::unzigzag;

Status malformed(size_t offset, std::string_view what) {
  return Status::error("malformed input shapes at byte " + std::to_string(offset) + ": " + std::string(what));
}

// Renders every item through `render` between "[" and "]", separated by ", ".
// The renderer reads a tensor's dims and an int list's values itself,
// straight into the text, so decoding needs no vector per tensor. A renderer
// whose kBracketed is false leaves out the outer brackets and the items it
// renders as nothing.
template <typename Render>
Result<std::string> walk(std::span<const uint8_t> bytes, Render render) {
  Reader r(bytes);
  std::string out = Render::kBracketed ? "[" : "";
  bool first = true;
  while (!r.at_end()) {
    const size_t at = r.offset();
    uint8_t t;
    r.byte(t);
    const size_t mark = out.size();
    const bool was_first = first;
    if (!first) out += ", ";
    first = false;
    switch (Tag(t)) {
      case Tag::IntList: {
        uint64_t count;
        if (!r.varint(count)) return malformed(at, "int list cut short");
        if (!render.int_list(out, count, r)) return malformed(at, "int list values cut short");
        break;
      }
      case Tag::Int: {
        uint64_t z;
        if (!r.varint(z)) return malformed(at, "int cut short");
        render.int_value(out, unzigzag(z));
        break;
      }
      case Tag::Tensor: {
        uint8_t dtype;
        uint64_t ndim;
        if (!r.byte(dtype) || !r.varint(ndim)) return malformed(at, "tensor cut short");
        if (!render.tensor(out, dtype, ndim, r)) return malformed(at, "tensor dims cut short");
        break;
      }
      case Tag::TensorList: {
        uint64_t count;
        if (!r.varint(count)) return malformed(at, "tensor list cut short");
        render.simple(out, Tag::TensorList);
        break;
      }
      case Tag::Scalar:
      case Tag::Undefined:
      case Tag::Other:
        render.simple(out, Tag(t));
        break;
      case Tag::Truncated:
        out += render.truncated();
        if (!r.at_end()) return malformed(r.offset(), "data after the truncation mark");
        break;
      default:
        return malformed(at, "unknown tag " + std::to_string(t));
    }
    if (!Render::kBracketed && out.size() == mark + (was_first ? 0 : 2)) {
      out.resize(mark);  // nothing to show for this item
      first = was_first;
    }
  }
  if (Render::kBracketed) out += ']';
  return out;
}

// Skips an int list's values (renderers that print none).
bool skip_ints(uint64_t count, Reader& r) {
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t v;
    if (!r.varint(v)) return false;
  }
  return true;
}

struct ShapesRender {
  static constexpr bool kBracketed = true;
  bool int_list(std::string& out, uint64_t count, Reader& r) const {
    out += "[]";
    return skip_ints(count, r);
  }
  void int_value(std::string& out, int64_t) const { out += "[]"; }
  bool tensor(std::string& out, uint8_t, uint64_t ndim, Reader& r) const {
    out += '[';
    for (uint64_t i = 0; i < ndim; ++i) {
      uint64_t d;
      if (!r.varint(d)) return false;
      if (i) out += ", ";
      out += std::to_string(d);
    }
    out += ']';
    return true;
  }
  void simple(std::string& out, Tag) const { out += "[]"; }
  const char* truncated() const { return "..."; }
};

struct DtypesRender {
  static constexpr bool kBracketed = true;
  bool int_list(std::string& out, uint64_t count, Reader& r) const {
    quoted(out, "");
    return skip_ints(count, r);
  }
  void int_value(std::string& out, int64_t) const { quoted(out, "Scalar"); }
  bool tensor(std::string& out, uint8_t dtype, uint64_t ndim, Reader& r) const {
    for (uint64_t i = 0; i < ndim; ++i) {
      uint64_t d;
      if (!r.varint(d)) return false;
    }
    quoted(out, dtype_name(dtype));
    return true;
  }
  void simple(std::string& out, Tag t) const {
    quoted(out, t == Tag::Scalar ? "Scalar" : t == Tag::TensorList ? "TensorList" : "");
  }
  const char* truncated() const { return "\"...\""; }
  static void quoted(std::string& out, std::string_view s) {
    out += '"';
    out += s;
    out += '"';
  }
};

struct ConcreteRender {
  static constexpr bool kBracketed = false;
  bool int_list(std::string& out, uint64_t count, Reader& r) const {
    out += '[';
    for (uint64_t i = 0; i < count; ++i) {
      uint64_t z;
      if (!r.varint(z)) return false;
      if (i) out += ", ";
      out += std::to_string(unzigzag(z));
    }
    out += ']';
    return true;
  }
  void int_value(std::string& out, int64_t v) const { out += std::to_string(v); }
  bool tensor(std::string& out, uint8_t dtype, uint64_t ndim, Reader& r) const {
    return ShapesRender{}.tensor(out, dtype, ndim, r);
  }
  void simple(std::string&, Tag) const {}
  const char* truncated() const { return "..."; }
};

}  // namespace

std::string_view dtype_name(uint8_t scalar_type) {
  return scalar_type < kDtypeNames.size() ? kDtypeNames[scalar_type] : std::string_view();
}

Result<std::string> shapes_text(std::span<const uint8_t> bytes) { return walk(bytes, ShapesRender{}); }

Result<std::string> dtypes_text(std::span<const uint8_t> bytes) { return walk(bytes, DtypesRender{}); }

Result<std::string> concrete_text(std::span<const uint8_t> bytes) { return walk(bytes, ConcreteRender{}); }

}  // namespace ptprof::shapes
