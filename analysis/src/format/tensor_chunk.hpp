// The TENSORS chunk (type 15, docs/format.md): trace::TensorGroup records,
// the tensor identity the memory categories need.
#pragma once
#include <string>

#include "format/byte_io.hpp"
#include "ptprof/status.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::format::detail {

// Appends one group: its size, then its fields in format.md's order.
void put_tensor_group(std::string& out, const trace::TensorGroup& g);
// `count` varint, then the groups.
std::string tensor_groups_payload(uint32_t count, const std::string& records);
// Appends the chunk's groups to t.tensor_groups; threads are checked against
// those read so far (they precede the chunk).
Status decode_tensor_groups(Cursor c, trace::Trace& t);

}  // namespace ptprof::format::detail
