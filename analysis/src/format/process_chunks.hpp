// The per-process attribute chunks (docs/format.md): PROCESS_ATTRIBUTES
// (rank, local rank, world size, host) and COSTS (what recording costs the
// process). Each is a record count, then per record the index of a process
// and a length-prefixed body, to which a later writer may append fields.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "format/byte_io.hpp"
#include "ptprof/status.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::format::detail {

// Appends the PROCESS_ATTRIBUTES record of process `index` to `out` when p
// has any attribute; says whether it did.
bool put_process_attributes(std::string& out, uint32_t index, const trace::Process& p);
// A chunk of `count` records appended by put_process_attributes.
std::string process_records_payload(uint32_t count, const std::string& records);
// The COSTS chunk: per process, (op, record) costs in picoseconds.
std::string costs_payload(const std::map<uint32_t, std::pair<uint32_t, uint32_t>>& costs);

// Set the attributes of processes already read.
Status decode_process_attributes(Cursor c, trace::Trace& t);
Status decode_costs(Cursor c, trace::Trace& t);

}  // namespace ptprof::format::detail
