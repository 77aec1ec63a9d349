#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <unordered_map>

#include "byte_io.hpp"
#include "chunk_writer.hpp"
#include "format_layout.hpp"
#include "ptprof/analysis/trace_file.hpp"

namespace ptprof::format {

using namespace detail;

uint32_t format_version() { return kFormatVersion; }

namespace {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Metadata records not yet written: a list of records appended since the last
// chunk of that kind, starting at index `first`.
struct Pending {
  uint32_t first = 0;
  uint32_t count = 0;
  std::string records;

  bool empty() const { return count == 0; }
  std::string take() {
    std::string out;
    put_varint(out, first);
    put_varint(out, count);
    out += records;
    first += count;
    count = 0;
    records.clear();
    return out;
  }
};

// Delta bases of one thread within the current event chunk; `chunk` tells
// whether they belong to it or are stale (and so reset to zero).
struct ThreadDelta {
  uint64_t chunk = UINT64_MAX;
  int64_t start = 0;
  int64_t seq_nr = 0;
};

struct ThreadCounts {
  uint64_t events = 0;
  uint64_t dropped = 0;
};

}  // namespace

struct TraceWriter::Impl {
  std::string path, tmp_path;
  std::unique_ptr<ChunkWriter> out;
  Status status;  // the first error; sticky
  bool finished = false;
  int64_t window_end_ns = 0;
  trace::Losses losses;

  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> string_ids;
  uint32_t string_count = 1;  // id 0 is the implicit ""
  Pending strings{1, 0, {}}, processes, threads;
  // PROCESS_ATTRIBUTES records not yet written (a count, not a table).
  uint32_t attribute_count = 0;
  std::string attributes;
  std::vector<ThreadCounts> thread_counts;

  std::array<std::string, kEventColumns> columns;
  uint32_t chunk_events = 0;
  uint64_t chunk_index = 0;
  std::vector<ThreadDelta> deltas;
  uint64_t events_written = 0;

  void fail(std::string msg) {
    if (status.ok()) status = Status::error(std::move(msg));
  }
  void fail(const Status& s) {
    if (status.ok()) status = s;
  }
  bool ok() const { return status.ok(); }

  void write_chunk(ChunkType type, std::string_view raw) {
    if (ok()) fail(out->write(type, raw));
  }

  void flush_metadata() {
    if (!strings.empty()) write_chunk(ChunkType::Strings, strings.take());
    if (!processes.empty()) write_chunk(ChunkType::Processes, processes.take());
    if (attribute_count) {
      std::string raw;
      put_varint(raw, attribute_count);
      raw += attributes;
      write_chunk(ChunkType::ProcessAttributes, raw);
      attribute_count = 0;
      attributes.clear();
    }
    if (!threads.empty()) write_chunk(ChunkType::Threads, threads.take());
  }

  void flush_events() {
    if (chunk_events == 0) return;
    // Everything an event may reference goes out before the event.
    flush_metadata();
    std::string raw;
    size_t total = 0;
    for (const auto& c : columns) total += c.size();
    raw.reserve(total + 64);
    put_varint(raw, chunk_events);
    put_varint(raw, kEventColumns);
    for (const auto& c : columns) put_varint(raw, c.size());
    for (auto& c : columns) {
      raw += c;
      c.clear();
    }
    write_chunk(ChunkType::Events, raw);
    chunk_events = 0;
    ++chunk_index;
  }

  void add_event(const trace::Event& e) {
    if (finished) return fail("add_event after finish()");
    if (e.thread >= thread_counts.size())
      return fail("event for thread " + std::to_string(e.thread) + " of " + std::to_string(thread_counts.size()));
    if (e.name >= string_count || e.shapes >= string_count)
      return fail("event names string " + std::to_string(std::max(e.name, e.shapes)) + " of " +
                  std::to_string(string_count));
    if (uint8_t(e.kind) > kKindMask)
      return fail("event kind " + std::to_string(unsigned(e.kind)) + " does not fit the format");
    ThreadDelta& d = deltas[e.thread];
    if (d.chunk != chunk_index) d = ThreadDelta{chunk_index, 0, 0};
    bool has_seq = e.seq_nr != -1;
    // Differences wrap in uint64 so every int64 pair round-trips exactly.
    put_varint(columns[kColThread], e.thread);
    put_varint(columns[kColKind], uint64_t(e.kind) | (has_seq ? kKindHasSeqNr : 0));
    put_varint(columns[kColName], e.name);
    put_svarint(columns[kColStart], int64_t(uint64_t(e.start_ns) - uint64_t(d.start)));
    put_varint(columns[kColDuration], uint64_t(e.end_ns) - uint64_t(e.start_ns));
    put_varint(columns[kColScope], e.scope);
    put_varint(columns[kColFlags], e.flags);
    put_varint(columns[kColShapes], e.shapes);
    if (has_seq) {
      put_svarint(columns[kColSeqNr], int64_t(uint64_t(e.seq_nr) - uint64_t(d.seq_nr)));
      d.seq_nr = e.seq_nr;
    }
    put_varint(columns[kColFwdThread], e.fwd_thread_id);
    put_varint(columns[kColArg], e.arg);
    d.start = e.end_ns;
    ++thread_counts[e.thread].events;
    ++events_written;
    if (++chunk_events == kEventsPerChunk) flush_events();
  }

  std::string footer() const {
    std::string raw;
    uint64_t total_events = 0, total_dropped = 0;
    put_varint(raw, thread_counts.size());
    for (const auto& t : thread_counts) {
      put_varint(raw, t.events);
      put_varint(raw, t.dropped);
      total_events += t.events;
      total_dropped += t.dropped;
    }
    put_varint(raw, total_events);
    put_varint(raw, total_dropped);
    put_svarint(raw, window_end_ns);
    // The losses ledger: fields appended in a fixed order (format.md).
    for (uint64_t v : {losses.unnamed_events, losses.names_refused, losses.lost_threads, losses.lost_thread_events,
                       losses.late_events, losses.malformed_bytes, losses.shm_short_threads, losses.shm_small_rings,
                       losses.shm_short_names})
      put_varint(raw, v);
    return raw;
  }
};

TraceWriter::TraceWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TraceWriter::~TraceWriter() = default;

Result<std::unique_ptr<TraceWriter>> TraceWriter::create(const std::string& path, const trace::Header& h) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->tmp_path = path + ".tmp";
  impl->window_end_ns = h.window_end_ns;
  auto out = ChunkWriter::open(impl->tmp_path);
  if (!out) return out.status();
  impl->out = std::move(*out);
  std::string raw;
  put_bytes(raw, h.host);
  put_svarint(raw, h.realtime_offset_ns);
  put_varint(raw, h.window);
  put_svarint(raw, h.window_start_ns);
  put_svarint(raw, h.window_end_ns);
  put_bytes(raw, h.schedule);
  put_bytes(raw, h.ptprof_version);
  if (Status s = impl->out->write(ChunkType::Header, raw); !s.ok()) return s;
  return std::make_unique<TraceWriter>(std::move(impl));
}

uint32_t TraceWriter::intern(std::string_view s) {
  Impl& m = *impl_;
  if (s.empty()) return 0;
  if (auto it = m.string_ids.find(s); it != m.string_ids.end()) return it->second;
  uint32_t id = m.string_count++;
  m.string_ids.emplace(std::string(s), id);
  put_bytes(m.strings.records, s);
  ++m.strings.count;
  // Keep chunks bounded even when a window interns millions of shape strings.
  if (m.strings.records.size() >= kMetadataChunkBytes) m.write_chunk(ChunkType::Strings, m.strings.take());
  return id;
}

uint32_t TraceWriter::add_process(const trace::Process& p) {
  Impl& m = *impl_;
  put_svarint(m.processes.records, p.pid);
  put_svarint(m.processes.records, p.ppid);
  put_svarint(m.processes.records, p.start_ns);
  put_bytes(m.processes.records, p.cmdline);
  const uint32_t index = m.processes.first + m.processes.count++;
  if (p.rank >= 0 || p.local_rank >= 0 || p.world_size >= 0 || !p.host.empty()) {
    std::string fields;
    put_svarint(fields, p.rank);
    put_svarint(fields, p.local_rank);
    put_svarint(fields, p.world_size);
    put_bytes(fields, p.host);
    put_varint(m.attributes, index);
    put_bytes(m.attributes, fields);
    ++m.attribute_count;
  }
  return index;
}

uint32_t TraceWriter::add_thread(const trace::Thread& t) {
  Impl& m = *impl_;
  uint32_t process_count = m.processes.first + m.processes.count;
  if (t.process >= process_count)
    m.fail("thread " + std::to_string(t.tid) + " names process " + std::to_string(t.process) + " of " +
           std::to_string(process_count));
  put_varint(m.threads.records, t.process);
  put_svarint(m.threads.records, t.tid);
  put_bytes(m.threads.records, t.name);
  m.thread_counts.push_back(ThreadCounts{0, t.dropped});
  m.deltas.emplace_back();
  return m.threads.first + m.threads.count++;
}

void TraceWriter::set_thread_dropped(uint32_t thread, uint64_t dropped) {
  Impl& m = *impl_;
  if (thread >= m.thread_counts.size()) return m.fail("set_thread_dropped: no thread " + std::to_string(thread));
  m.thread_counts[thread].dropped = dropped;
}

void TraceWriter::set_window_end(int64_t end_ns) { impl_->window_end_ns = end_ns; }

void TraceWriter::set_losses(const trace::Losses& losses) { impl_->losses = losses; }

void TraceWriter::add_event(const trace::Event& e) { impl_->add_event(e); }

Status TraceWriter::finish() {
  Impl& m = *impl_;
  if (m.finished) return Status::error(m.path + ": finish() called twice");
  m.finished = true;
  m.flush_events();
  m.flush_metadata();
  m.write_chunk(ChunkType::Footer, m.footer());
  m.fail(m.out->close());
  if (m.ok() && std::rename(m.tmp_path.c_str(), m.path.c_str()) != 0)
    m.fail(m.path + ": rename from .tmp failed: " + std::strerror(errno));
  if (!m.ok()) {
    // A writer that failed must not leave something that looks like a trace.
    std::remove(m.tmp_path.c_str());
    const std::string& e = m.status.message();
    return Status::error(e.rfind(m.path, 0) == 0 ? e : m.path + ": " + e);
  }
  return {};
}

uint64_t TraceWriter::bytes_written() const { return impl_->out->bytes_written(); }
uint64_t TraceWriter::events_written() const { return impl_->events_written; }

}  // namespace ptprof::format
