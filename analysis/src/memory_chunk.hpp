// The MEMORY chunk (type 9, docs/format.md): the table of trace::MemoryInfo
// that Memory events reference through Event::arg.
#pragma once
#include <string>

#include "byte_io.hpp"
#include "ptprof/status.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::format::detail {

// Appends one record of the table (its fields, in format.md's order).
void put_memory_record(std::string& out, const trace::MemoryInfo& m);
// Appends a MEMORY chunk's records to t.memory; string indices are checked
// against the strings read so far.
Status decode_memory(Cursor c, trace::Trace& t);
// Whether a decoded event's reference into t.memory is valid (only Memory
// events reference it).
bool memory_ref_ok(const trace::Event& e, const trace::Trace& t);

}  // namespace ptprof::format::detail
