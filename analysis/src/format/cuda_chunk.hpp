// The CUDA chunk (docs/format.md): the table of trace::CudaInfo that CUDA
// events reference through Event::arg, written column by column.
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "format/byte_io.hpp"
#include "format/format_layout.hpp"
#include "ptprof/status.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::format::detail {

// The records not yet written, one column each.
class CudaColumns {
 public:
  // Appends one record (its strings already checked by the writer).
  void put(const trace::CudaInfo& c);
  // The chunk's payload for records first .. first + count - 1, those put
  // since the last take(); the columns are emptied.
  std::string take(uint32_t first, uint32_t count);

 private:
  std::array<std::string, kCudaColumnsWritten> columns_;
};

// Appends a CUDA chunk's records to t.cuda; string indices are checked
// against the strings read so far. Columns a later version adds are skipped.
Status decode_cuda(Cursor c, trace::Trace& t);

}  // namespace ptprof::format::detail
