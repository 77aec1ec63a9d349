// The event chunk being filled, column by column. The launcher appends a
// dozen varints per event it drains, so the append is the drain's cost per
// event: one room check per event (every column has room for another event
// of ten-byte varints), not one per value, and each column a bare cursor.
#pragma once
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

#include "format/byte_io.hpp"
#include "ptprof/varint.hpp"

namespace ptprof::format::detail {

template <size_t Columns>
class EventColumns {
 public:
  EventColumns() { ends_.fill(nullptr); }
  EventColumns(const EventColumns&) = delete;
  EventColumns& operator=(const EventColumns&) = delete;

  // Before an event's values: afterwards every column takes one more varint
  // of any size.
  [[gnu::always_inline]] void reserve_event() {
    if (room_ == 0) [[unlikely]]
      make_room();
    --room_;
  }
  [[gnu::always_inline]] void put_varint(size_t column, uint64_t v) { ends_[column] = varint::write(ends_[column], v); }
  [[gnu::always_inline]] void put_svarint(size_t column, int64_t v) { put_varint(column, zigzag(v)); }

  size_t size(size_t column) const { return size_t(ends_[column] - data_[column].get()); }
  std::string_view view(size_t column) const {
    return {reinterpret_cast<const char*>(data_[column].get()), size(column)};
  }
  // Empties every column and keeps the room: the next chunk fills about as
  // much.
  void clear() {
    for (size_t c = 0; c < Columns; ++c) ends_[c] = data_[c].get();
    room_ = 0;  // recounted on the next event
  }

 private:
  // Events between two recounts at least, so that the recount's cost is
  // spread thin.
  static constexpr size_t kMinRoomEvents = 256;

  [[gnu::noinline]] void make_room() {
    size_t room = SIZE_MAX;
    for (size_t c = 0; c < Columns; ++c) {
      const size_t used = ends_[c] ? size(c) : 0;
      if (capacity_[c] - used < kMinRoomEvents * varint::kMaxBytes) {
        size_t capacity = capacity_[c] ? capacity_[c] : 4096;
        while (capacity - used < kMinRoomEvents * varint::kMaxBytes) capacity *= 2;
        auto data = std::make_unique_for_overwrite<uint8_t[]>(capacity);
        if (used) std::memcpy(data.get(), data_[c].get(), used);
        data_[c] = std::move(data);
        capacity_[c] = capacity;
        ends_[c] = data_[c].get() + used;
      }
      room = std::min(room, (capacity_[c] - used) / varint::kMaxBytes);
    }
    room_ = room;
  }

  std::array<std::unique_ptr<uint8_t[]>, Columns> data_;
  std::array<uint8_t*, Columns> ends_;
  std::array<size_t, Columns> capacity_{};
  size_t room_ = 0;
};

}  // namespace ptprof::format::detail
