// One event column of the chunk being filled. The launcher appends a dozen
// varints per event it drains, so the append is the drain's cost per event:
// one capacity check per value, no string bookkeeping (std::string's append
// went through memcpy and kept a terminator up to date).
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

#include "format/byte_io.hpp"
#include "ptprof/varint.hpp"

namespace ptprof::format::detail {

class ColumnBuffer {
 public:
  // Inlined into the writer's add_event (a call per value showed as a third
  // of the drain's time); growing stays out of line.
  [[gnu::always_inline]] void put_varint(uint64_t v) {
    if (capacity_ - size_ < varint::kMaxBytes) [[unlikely]]
      grow();
    size_ = size_t(varint::write(data_.get() + size_, v) - data_.get());
  }
  [[gnu::always_inline]] void put_svarint(int64_t v) { put_varint(zigzag(v)); }

  size_t size() const { return size_; }
  std::string_view view() const { return {reinterpret_cast<const char*>(data_.get()), size_}; }
  // Keeps the room: the next chunk fills about as much.
  void clear() { size_ = 0; }

 private:
  [[gnu::noinline]] void grow() {
    const size_t capacity = capacity_ ? capacity_ * 2 : 4096;
    auto data = std::make_unique_for_overwrite<uint8_t[]>(capacity);
    if (size_) std::memcpy(data.get(), data_.get(), size_);
    data_ = std::move(data);
    capacity_ = capacity;
  }

  std::unique_ptr<uint8_t[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace ptprof::format::detail
