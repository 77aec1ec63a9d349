// Decoders for each chunk payload (already checksummed and decompressed).
// Each returns "" on success or what is wrong with the payload; the caller
// adds the file and byte offset. They append to a Trace being built and check
// every index against what has been read so far.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "format/byte_io.hpp"
#include "ptprof/status.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::format::detail {

inline bool fits_i32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

// A record count, each record at least `min_record_bytes`, that must fit the
// payload left: a larger one is damage, and must not become a huge reserve().
Status check_count(const Cursor& c, std::string_view what, uint64_t count, size_t min_record_bytes = 1);

// What a decoder says when a payload ends inside a record or holds a malformed varint.
extern const char* const kTruncatedPayload;

// The preamble of a chunk that continues a list (strings, frames, memory
// records...): the index of its first record, which must be `have` (anything
// else means a chunk was lost or reordered), and its record count, into
// `count`. Each record takes at least `min_record_bytes`: a larger count is
// damage, and must not become a huge reserve(). `what` names the chunk.
Status check_first(Cursor& c, size_t have, std::string_view what, uint64_t& count, size_t min_record_bytes = 1);

Status decode_header(Cursor c, trace::Header& h);
Status decode_strings(Cursor c, trace::Trace& t);
Status decode_processes(Cursor c, trace::Trace& t);
Status decode_threads(Cursor c, trace::Trace& t);
Status decode_gpu_lanes(Cursor c, trace::Trace& t);
// Appends to t.events and counts per thread into `counts` (grown as needed).
Status decode_events(Cursor c, trace::Trace& t, std::vector<uint64_t>& counts);

}  // namespace ptprof::format::detail
