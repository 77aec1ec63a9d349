#include "format/footer_chunk.hpp"

#include "format/chunk_decode.hpp"

namespace ptprof::format::detail {

std::string encode_footer(const FooterData& f) {
  std::string raw;
  uint64_t total_events = 0, total_dropped = 0;
  put_varint(raw, f.thread_events.size());
  for (size_t i = 0; i < f.thread_events.size(); ++i) {
    put_varint(raw, f.thread_events[i]);
    put_varint(raw, f.thread_dropped[i]);
    total_events += f.thread_events[i];
    total_dropped += f.thread_dropped[i];
  }
  put_varint(raw, total_events);
  put_varint(raw, total_dropped);
  put_svarint(raw, f.window_end_ns);
  // The losses ledger: fields appended in a fixed order (format.md).
  for (const trace::LossField& field : trace::kLossFields) put_varint(raw, f.losses.*field.member);
  return raw;
}

Status decode_footer(Cursor c, FooterData& f) {
  uint64_t n = c.varint();
  if (!c.ok()) return Status::error(kTruncatedPayload);
  if (n > c.remaining() / 2) return Status::error("footer claims " + std::to_string(n) + " threads");
  f.thread_events.resize(n);
  f.thread_dropped.resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    f.thread_events[i] = c.varint();
    f.thread_dropped[i] = c.varint();
  }
  f.total_events = c.varint();
  f.total_dropped = c.varint();
  f.window_end_ns = c.svarint();
  if (!c.ok()) return Status::error(kTruncatedPayload);
  // The losses ledger, a generation of fields at a time: a file written
  // before a generation existed ends before it (all zero then).
  uint32_t generation = 0;
  for (const trace::LossField& field : trace::kLossFields) {
    if (field.generation != generation) {
      if (!c.ok()) return Status::error(kTruncatedPayload);
      if (c.remaining() == 0) break;
      generation = field.generation;
    }
    f.losses.*field.member = c.varint();
  }
  if (!c.ok()) return Status::error(kTruncatedPayload);
  uint64_t events = 0, dropped = 0;
  for (uint64_t i = 0; i < n; ++i) {
    events += f.thread_events[i];
    dropped += f.thread_dropped[i];
  }
  if (events != f.total_events || dropped != f.total_dropped)
    return Status::error("footer totals disagree with its per-thread counts");
  return {};
}

}  // namespace ptprof::format::detail
