// Input shapes of an operator: a compact binary encoding that the torch bridge
// writes on the hot path, and decoders that render it exactly as torch 1.13's
// profiler does.
//
// Encoding: a sequence of items, one per RecordFunction input, no header (the
// trace file's version covers the format). Every item starts with a Tag byte:
//
//   Tensor      tag, dtype (c10::ScalarType as u8), ndim (varint), ndim dims (varint)
//   Scalar      tag                     (IValue::isScalar: int, float, bool, complex)
//   TensorList  tag, count (varint)     (count is kept for tools; torch 1.13 prints [])
//   Undefined   tag                     (undefined or nested tensor)
//   Other       tag                     (None, str, int[], Device, ...)
//   Truncated   tag                     (the encoder ran out of room; nothing follows)
//   IntList     tag, count (varint), count values (zigzag varint)   (int[]: its values)
//   Int         tag, value (zigzag varint)                          (an int scalar: its value)
//
// Varints are unsigned LEB128. Dims are tensor sizes, so never negative.
//
// Truncation rule: the encoder keeps the last byte of its buffer for the
// Truncated tag. An item is written only if it fits whole before that byte;
// the first item that does not fit writes Truncated instead and every later
// call is a no-op. So a buffer always holds complete items, optionally followed
// by one Truncated tag, and decodes without error.
//
// Rendering (observed in torch 1.13's profiler, see
// tests/integration/torch_shapes_probe.py):
//   shapes_text: Python's str() of a list of lists, e.g. "[[4, 3, 16, 16], [8], [], []]".
//     A tensor prints its sizes ([] for a 0-dim tensor); every other item
//     prints [] (scalars, tensor lists, undefined tensors, None, strings).
//     No inputs prints "[]". Truncated prints a final "...": "[[2, 3], ...]".
//     IntList and Int print [] too: torch's text knows no values.
//   dtypes_text: Kineto's "Input type" JSON array, e.g. ["float", "Scalar", ""].
//     A tensor prints its C++ type name as c10::TypeMeta does ("float",
//     "long int", "c10::Half"); Scalar "Scalar"; TensorList "TensorList";
//     Undefined and Other "". Truncated prints "...". Int prints "Scalar",
//     IntList "" (an int is a scalar to torch, an int list is not).
//   concrete_text: the inputs that have a value to show, as torch 2.x's
//     "Concrete Inputs" keep them, joined by ", " without brackets around
//     the whole: a tensor's sizes "[512, 512]", an int list's values
//     "[512, 512]", an int's value "2"; other inputs are left out, so
//     torch.ones(512, 512) gives "[512, 512]" and no values give "".
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "ptprof/status.hpp"
#include "ptprof/varint.hpp"

namespace ptprof::shapes {

enum class Tag : uint8_t {
  Tensor = 1,
  Scalar = 2,
  TensorList = 3,
  Undefined = 4,
  Other = 5,
  Truncated = 6,
  IntList = 7,
  Int = 8,
};

// Writes items into a caller's buffer. No allocation, no exceptions; meant for
// the bridge's per-op callback.
class Encoder {
 public:
  // `capacity` must be at least 1 (room for the Truncated tag).
  Encoder(uint8_t* buf, size_t capacity) noexcept
      : pos_(buf), limit_(buf + (capacity ? capacity - 1 : 0)), begin_(buf) {}

  bool tensor(uint8_t dtype, std::span<const int64_t> dims) noexcept {
    if (done_) return false;
    const size_t n = dims.size();
    // Fast path: the worst case fits, so no per-byte checks.
    if (size_t(limit_ - pos_) < 2 + varint::kMaxBytes * (n + 1) && 2 + exact_size(dims) > size_t(limit_ - pos_))
      return truncate();
    *pos_++ = uint8_t(Tag::Tensor);
    *pos_++ = dtype;
    put_varint(n);
    for (int64_t d : dims) put_varint(uint64_t(d));
    return true;
  }
  bool scalar() noexcept { return tag(Tag::Scalar); }
  bool undefined() noexcept { return tag(Tag::Undefined); }
  bool other() noexcept { return tag(Tag::Other); }
  // An int list: `get(list, i)` gives its i-th value.
  template <class List, class Get>
  bool int_list(const List& list, size_t n, Get get) noexcept {
    if (done_) return false;
    size_t need = 1 + varint::size(n);
    for (size_t i = 0; i < n && need <= size_t(limit_ - pos_); ++i) need += varint::size(varint::zigzag(get(list, i)));
    if (need > size_t(limit_ - pos_)) return truncate();
    *pos_++ = uint8_t(Tag::IntList);
    put_varint(n);
    for (size_t i = 0; i < n; ++i) put_varint(varint::zigzag(get(list, i)));
    return true;
  }
  bool int_value(int64_t v) noexcept {
    if (done_) return false;
    if (size_t(limit_ - pos_) < 1 + varint::size(varint::zigzag(v))) return truncate();
    *pos_++ = uint8_t(Tag::Int);
    put_varint(varint::zigzag(v));
    return true;
  }
  bool tensor_list(uint64_t count) noexcept {
    if (done_) return false;
    if (size_t(limit_ - pos_) < 1 + varint::size(count)) return truncate();
    *pos_++ = uint8_t(Tag::TensorList);
    put_varint(count);
    return true;
  }

  // Bytes written so far, the Truncated tag included.
  size_t size() const noexcept { return size_t(pos_ - begin_); }
  bool truncated() const noexcept { return done_; }

 private:
  bool tag(Tag t) noexcept {
    if (done_) return false;
    if (pos_ == limit_) return truncate();
    *pos_++ = uint8_t(t);
    return true;
  }
  bool truncate() noexcept {
    *pos_++ = uint8_t(Tag::Truncated);  // the reserved last byte, or earlier
    done_ = true;
    return false;
  }
  static size_t exact_size(std::span<const int64_t> dims) noexcept {
    size_t n = varint::size(dims.size());
    for (int64_t d : dims) n += varint::size(uint64_t(d));
    return n;
  }
  void put_varint(uint64_t v) noexcept { pos_ = varint::write(pos_, v); }

  uint8_t* pos_;
  uint8_t* limit_;  // the byte kept for Truncated
  uint8_t* begin_;
  bool done_ = false;
};

// The C++ type name torch 1.13 prints for a c10::ScalarType ("float",
// "long int", ...); "" for a value it does not know.
std::string_view dtype_name(uint8_t scalar_type);

// Renderings of an encoding. nullopt when the bytes are malformed (an unknown
// tag, a varint running past the end, a dim count larger than the bytes left);
// An error names the byte offset.
Result<std::string> shapes_text(std::span<const uint8_t> bytes);
Result<std::string> dtypes_text(std::span<const uint8_t> bytes);
Result<std::string> concrete_text(std::span<const uint8_t> bytes);

}  // namespace ptprof::shapes
