// The MEMORY chunk (type 9, docs/format.md): the table of trace::MemoryInfo
// that Memory events reference through Event::arg.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "format/byte_io.hpp"
#include "ptprof/status.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::format::detail {

// Appends one record of the table (its fields, in format.md's order).
void put_memory_record(std::string& out, const trace::MemoryInfo& m);
// Appends a MEMORY chunk's records to t.memory; string indices are checked
// against the strings read so far.
Status decode_memory(Cursor c, trace::Trace& t);
// The MEMORY_ATTRIBUTES chunk (type 13): what a memory record carries beyond
// the MEMORY chunk's fields (MemoryInfo::segment, top_inputs, alloc_inputs).
// Appends the record of memory record `index` when it has any of them.
void put_memory_attributes(std::string& out, uint32_t* count, uint32_t index, const trace::MemoryInfo& m);
// `count` varint, then the records put_memory_attributes appended.
std::string memory_attributes_payload(uint32_t count, const std::string& records);
// Sets the attributes of the records it names (which must exist).
Status decode_memory_attributes(Cursor c, trace::Trace& t);
// Whether a decoded event's reference into t.memory is valid (only Memory
// events reference it).
bool memory_ref_ok(const trace::Event& e, const trace::Trace& t);

}  // namespace ptprof::format::detail
