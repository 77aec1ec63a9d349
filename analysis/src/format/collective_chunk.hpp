// The COLLECTIVES chunk (type 14, docs/format.md): trace::CollectiveInfo
// records, each the facts torch gave of one collective op.
#pragma once
#include <string>

#include "format/byte_io.hpp"
#include "ptprof/status.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::format::detail {

// Appends one record: its size, then its fields in format.md's order.
void put_collective_record(std::string& out, const trace::CollectiveInfo& c);
// `count` varint, then the records.
std::string collectives_payload(uint32_t count, const std::string& records);
// Appends the chunk's records to t.collectives; threads and strings are
// checked against those read so far (both precede the chunk).
Status decode_collectives(Cursor c, trace::Trace& t);

}  // namespace ptprof::format::detail
