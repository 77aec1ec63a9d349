#include "format/chunk_decode.hpp"

#include <algorithm>
#include <array>
#include <limits>

#include "format/format_layout.hpp"
#include "format/memory_chunk.hpp"

namespace ptprof::format::detail {

const char* const kTruncatedPayload = "payload ends inside a record or holds a malformed varint";

namespace {}  // namespace

Status check_count(const Cursor& c, std::string_view what, uint64_t count, size_t min_record_bytes) {
  if (count > c.remaining() / min_record_bytes)
    return Status::error(std::string(what) + " chunk claims " + std::to_string(count) + " records in " +
                         std::to_string(c.remaining()) + " bytes");
  return {};
}

Status check_first(Cursor& c, size_t have, std::string_view what, uint64_t& count, size_t min_record_bytes) {
  const uint64_t first = c.varint();
  count = c.varint();
  if (!c.ok()) return Status::error(std::string(what) + " chunk: " + kTruncatedPayload);
  if (first != have)
    return Status::error(std::string(what) + " chunk starts at index " + std::to_string(first) + ", expected " +
                         std::to_string(have));
  return check_count(c, what, count, min_record_bytes);
}

Status decode_header(Cursor c, trace::Header& h) {
  h.version = kFormatVersion;
  h.host = std::string(c.str());
  h.realtime_offset_ns = c.svarint();
  uint64_t window = c.varint();
  h.window_start_ns = c.svarint();
  h.window_end_ns = c.svarint();
  h.schedule = std::string(c.str());
  h.ptprof_version = std::string(c.str());
  if (!c.ok()) return Status::error(kTruncatedPayload);
  if (window > UINT32_MAX) return Status::error("window index " + std::to_string(window) + " out of range");
  h.window = uint32_t(window);
  // Trailing bytes are fields added by a later writer: ignored by design.
  return {};
}

Status decode_strings(Cursor c, trace::Trace& t) {
  uint64_t count = 0;
  PTPROF_RETURN_IF_ERROR(check_first(c, t.strings.size(), "strings", count));
  if (t.strings.size() + count > UINT32_MAX) return Status::error("too many strings");
  t.strings.reserve(t.strings.size() + count);
  for (uint64_t i = 0; i < count; ++i) {
    std::string_view s = c.str();
    if (!c.ok()) return Status::error(kTruncatedPayload);
    t.strings.emplace_back(s);
  }
  return {};
}

Status decode_processes(Cursor c, trace::Trace& t) {
  uint64_t count = 0;
  PTPROF_RETURN_IF_ERROR(check_first(c, t.processes.size(), "processes", count));
  for (uint64_t i = 0; i < count; ++i) {
    trace::Process p;
    int64_t pid = c.svarint(), ppid = c.svarint();
    p.start_ns = c.svarint();
    p.cmdline = std::string(c.str());
    if (!c.ok()) return Status::error(kTruncatedPayload);
    if (!fits_i32(pid) || !fits_i32(ppid)) return Status::error("process pid out of range");
    p.pid = int32_t(pid);
    p.ppid = int32_t(ppid);
    t.processes.push_back(std::move(p));
  }
  return {};
}

Status decode_threads(Cursor c, trace::Trace& t) {
  uint64_t count = 0;
  PTPROF_RETURN_IF_ERROR(check_first(c, t.threads.size(), "threads", count));
  for (uint64_t i = 0; i < count; ++i) {
    trace::Thread th;
    uint64_t process = c.varint();
    int64_t tid = c.svarint();
    th.name = std::string(c.str());
    if (!c.ok()) return Status::error(kTruncatedPayload);
    if (process >= t.processes.size())
      return Status::error("thread " + std::to_string(t.threads.size()) + " names process " + std::to_string(process) +
                           " of " + std::to_string(t.processes.size()));
    if (!fits_i32(tid)) return Status::error("thread tid out of range");
    th.process = uint32_t(process);
    th.tid = int32_t(tid);
    t.threads.push_back(std::move(th));
  }
  return {};
}

Status decode_gpu_lanes(Cursor c, trace::Trace& t) {
  uint64_t count = c.varint();
  if (!c.ok()) return Status::error(kTruncatedPayload);
  if (count > c.remaining() / 2)
    return Status::error("GPU lanes chunk claims " + std::to_string(count) + " lanes in " +
                         std::to_string(c.remaining()) + " bytes");
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t thread = c.varint();
    uint64_t device = c.varint();
    if (!c.ok()) return Status::error(kTruncatedPayload);
    if (thread >= t.threads.size())
      return Status::error("GPU lane names thread " + std::to_string(thread) + " of " +
                           std::to_string(t.threads.size()));
    if (device > uint64_t(std::numeric_limits<int32_t>::max()))
      return Status::error("GPU lane device " + std::to_string(device) + " out of range");
    t.threads[thread].device = int32_t(device);
  }
  return {};
}

Status decode_events(Cursor c, trace::Trace& t, std::vector<uint64_t>& counts) {
  uint64_t n = c.varint();
  uint64_t ncols = c.varint();
  if (!c.ok()) return Status::error(kTruncatedPayload);
  if (ncols < kEventColumnsRequired)
    return Status::error("event chunk has " + std::to_string(ncols) + " columns, expected " +
                         std::to_string(unsigned(kEventColumnsRequired)));
  // Every event takes at least one byte in each required column but kColSeqNr.
  if (n > c.remaining() / (kEventColumnsRequired - 1) || ncols > c.remaining())
    return Status::error("event chunk claims " + std::to_string(n) + " events in " + std::to_string(c.remaining()) +
                         " bytes");
  std::array<uint64_t, kEventColumns> sizes{};
  for (uint64_t i = 0; i < ncols; ++i) {
    uint64_t s = c.varint();
    if (i < kEventColumns) sizes[i] = s;
  }
  if (!c.ok()) return Status::error(kTruncatedPayload);
  std::array<Cursor, kEventColumns> col;
  const bool has_stacks = ncols > kColStack;
  for (size_t i = 0; i < kEventColumns; ++i) {
    if (sizes[i] > c.remaining()) return Status::error("event column " + std::to_string(i) + " overruns the chunk");
    col[i] = c.sub(size_t(sizes[i]));
  }
  // Extra columns (appended by a later writer) are skipped: nothing to do.

  const size_t nthreads = t.threads.size();
  const size_t nstrings = t.strings.size();
  if (counts.size() < nthreads) counts.resize(nthreads, 0);
  std::vector<int64_t> prev_start(nthreads, 0), prev_seq(nthreads, 0);
  // Geometric growth: an exact reserve per chunk would copy every event again
  // for each chunk.
  if (t.events.capacity() < t.events.size() + n)
    t.events.reserve(std::max<size_t>(t.events.size() + n, t.events.capacity() * 2));
  for (uint64_t i = 0; i < n; ++i) {
    trace::Event e;
    uint64_t thread = col[kColThread].varint();
    uint64_t kind = col[kColKind].varint();
    uint64_t name = col[kColName].varint();
    int64_t start_delta = col[kColStart].svarint();
    uint64_t duration = col[kColDuration].varint();
    uint64_t scope = col[kColScope].varint();
    uint64_t flags = col[kColFlags].varint();
    uint64_t shapes = col[kColShapes].varint();
    uint64_t fwd = col[kColFwdThread].varint();
    uint64_t arg = col[kColArg].varint();
    uint64_t stack = has_stacks ? col[kColStack].varint() : 0;
    if (stack > t.stacks.size())
      return Status::error("event " + std::to_string(i) + " refers to stack " + std::to_string(stack) + " of " +
                           std::to_string(t.stacks.size()));
    if (thread >= nthreads)
      return Status::error("event " + std::to_string(i) + " names thread " + std::to_string(thread) + " of " +
                           std::to_string(nthreads));
    if (name >= nstrings || shapes >= nstrings)
      return Status::error("event " + std::to_string(i) + " names string " + std::to_string(std::max(name, shapes)) +
                           " of " + std::to_string(nstrings));
    if (kind > (kKindMask | kKindHasSeqNr) || scope > UINT8_MAX || flags > UINT16_MAX)
      return Status::error("event " + std::to_string(i) + " has an invalid kind, scope or flags");
    e.thread = uint32_t(thread);
    e.kind = trace::EventKind(kind & kKindMask);
    e.name = uint32_t(name);
    e.start_ns = int64_t(uint64_t(prev_start[thread]) + uint64_t(start_delta));
    e.end_ns = int64_t(uint64_t(e.start_ns) + duration);
    // No clock gives such times, and differences and sums of them would
    // overflow in every consumer: a checksum-valid file that holds them is
    // damaged (or crafted).
    if (e.start_ns < -kMaxAbsTimeNs || e.start_ns > kMaxAbsTimeNs || e.end_ns < -kMaxAbsTimeNs ||
        e.end_ns > kMaxAbsTimeNs)
      return Status::error("event " + std::to_string(i) + " has times out of range (start " +
                           std::to_string(e.start_ns) + " ns, duration " + std::to_string(duration) +
                           " ns; accepted: within 2^61 ns, 73 years, of the clock's zero)");
    prev_start[thread] = e.end_ns;
    e.scope = uint8_t(scope);
    e.flags = uint16_t(flags);
    e.shapes = uint32_t(shapes);
    if (kind & kKindHasSeqNr) {
      e.seq_nr = int64_t(uint64_t(prev_seq[thread]) + uint64_t(col[kColSeqNr].svarint()));
      prev_seq[thread] = e.seq_nr;
    }
    if (kind_has_cuda_info(kind & kKindMask) && arg > t.cuda.size())
      return Status::error("event " + std::to_string(i) + " refers to CUDA record " + std::to_string(arg) + " of " +
                           std::to_string(t.cuda.size()));
    e.fwd_thread_id = fwd;
    e.arg = arg;
    e.stack = uint32_t(stack);
    if (!memory_ref_ok(e, t))
      return Status::error("event " + std::to_string(i) + " references memory record " + std::to_string(arg) + " of " +
                           std::to_string(t.memory.size()));
    ++counts[thread];
    t.events.push_back(e);
  }
  for (size_t i = 0; i < kEventColumns; ++i) {
    if (!col[i].ok()) return Status::error("event column " + std::to_string(i) + " ends early or is malformed");
    if (!col[i].at_end()) return Status::error("event column " + std::to_string(i) + " has trailing bytes");
  }
  return {};
}

}  // namespace ptprof::format::detail
