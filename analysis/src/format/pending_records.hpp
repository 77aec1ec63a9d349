// Metadata records not yet written: a list of records appended since the last
// chunk of that kind, starting at index `first` (the preamble that
// check_first reads back).
#pragma once
#include <cstdint>
#include <string>

#include "format/byte_io.hpp"

namespace ptprof::format::detail {

struct PendingRecords {
  uint32_t first = 0;
  uint32_t count = 0;
  std::string records;

  bool empty() const { return count == 0; }
  std::string take() {
    std::string out;
    put_varint(out, first);
    put_varint(out, count);
    out += records;
    first += count;
    count = 0;
    records.clear();
    return out;
  }
};

}  // namespace ptprof::format::detail
