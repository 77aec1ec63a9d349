// Decoders for each chunk payload (already checksummed and decompressed).
// Each returns "" on success or what is wrong with the payload; the caller
// adds the file and byte offset. They append to a Trace being built and check
// every index against what has been read so far.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "format/byte_io.hpp"
#include "ptprof/status.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::format::detail {

struct FooterData {
  std::vector<uint64_t> thread_events;
  std::vector<uint64_t> thread_dropped;
  uint64_t total_events = 0;
  uint64_t total_dropped = 0;
  int64_t window_end_ns = 0;
  trace::Losses losses;  // absent in files written before the ledger: all zero
};

Status decode_header(Cursor c, trace::Header& h);
Status decode_strings(Cursor c, trace::Trace& t);
Status decode_processes(Cursor c, trace::Trace& t);
Status decode_threads(Cursor c, trace::Trace& t);
Status decode_process_attributes(Cursor c, trace::Trace& t);
Status decode_costs(Cursor c, trace::Trace& t);
Status decode_cuda(Cursor c, trace::Trace& t);
Status decode_gpu_lanes(Cursor c, trace::Trace& t);
// Appends to t.events and counts per thread into `counts` (grown as needed).
Status decode_events(Cursor c, trace::Trace& t, std::vector<uint64_t>& counts);
Status decode_footer(Cursor c, FooterData& f);

}  // namespace ptprof::format::detail
