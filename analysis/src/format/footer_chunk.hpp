// The FOOTER chunk (docs/format.md): per-thread event and drop counts, their
// totals, the window's end and the losses ledger, written by finish().
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

// The payload of `f`; the totals are summed from the per-thread counts.
std::string encode_footer(const FooterData& f);
Status decode_footer(Cursor c, FooterData& f);

}  // namespace ptprof::format::detail
