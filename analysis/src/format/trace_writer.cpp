#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "format/byte_io.hpp"
#include "format/chunk_writer.hpp"
#include "format/collective_chunk.hpp"
#include "format/cuda_chunk.hpp"
#include "format/event_chunk.hpp"
#include "format/exclusive_file.hpp"
#include "format/footer_chunk.hpp"
#include "format/format_layout.hpp"
#include "format/memory_chunk.hpp"
#include "format/pending_records.hpp"
#include "format/process_chunks.hpp"
#include "format/stack_chunk.hpp"
#include "format/tensor_chunk.hpp"
#include "ptprof/analysis/trace_file.hpp"
#include "ptprof/string_hash.hpp"

namespace ptprof::format {

using namespace detail;

uint32_t format_version() { return kFormatVersion; }

namespace {

struct ThreadCounts {
  uint64_t events = 0;
  uint64_t dropped = 0;
};

// Names tried when the one asked for is taken (by another run's file, or by
// a file or symlink someone planted): "x.w000-1.bin", "x.w000-2.bin", ...
constexpr unsigned kNameAttempts = 100;

}  // namespace

struct TraceWriter::Impl {
  std::string requested;    // the name asked for
  unsigned name_index = 0;  // alternative_name(requested, name_index) is the name
  std::string path, tmp_path;
  std::unique_ptr<ChunkWriter> out;
  Status status;  // the first error; sticky
  bool finished = false;
  int64_t window_end_ns = 0;
  trace::Losses losses;

  StringMap<uint32_t> string_ids;
  uint32_t string_count = 1;  // id 0 is the implicit ""
  PendingRecords strings{1, 0, {}}, processes, threads;
  // PROCESS_ATTRIBUTES records not yet written (a count, not a table).
  uint32_t attribute_count = 0;
  std::string attributes;
  // The processes as added (their attributes, for set_process_role).
  std::map<uint32_t, trace::Process> added;
  // COSTS records, written with the footer: process -> (op, record) ps.
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> costs;
  PendingRecords memory;          // Trace::memory records not yet written
  std::string memory_attributes;  // MEMORY_ATTRIBUTES records of those
  uint32_t memory_attribute_count = 0;
  std::string collectives;  // COLLECTIVES records not yet written
  uint32_t collective_count = 0;
  std::string tensor_groups;  // TENSORS records not yet written
  uint32_t tensor_group_count = 0;
  StackTable stack_table;  // call stacks, each written once
  std::vector<ThreadCounts> thread_counts;

  // CUDA records not yet written, column by column, and GPU lanes.
  CudaColumns cuda_columns;
  uint32_t cuda_first = 0, cuda_count = 0;
  std::string lanes;
  uint32_t lane_count = 0;

  EventChunk events;
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
      write_chunk(ChunkType::ProcessAttributes, process_records_payload(attribute_count, attributes));
      attribute_count = 0;
      attributes.clear();
    }
    if (!threads.empty()) write_chunk(ChunkType::Threads, threads.take());
    flush_cuda();
    if (lane_count) {
      std::string raw;
      put_varint(raw, lane_count);
      raw += lanes;
      write_chunk(ChunkType::GpuLanes, raw);
      lanes.clear();
      lane_count = 0;
    }
    flush_memory();
    flush_stacks();
    if (collective_count) {
      write_chunk(ChunkType::Collectives, collectives_payload(collective_count, collectives));
      collectives.clear();
      collective_count = 0;
    }
    if (tensor_group_count) {
      write_chunk(ChunkType::Tensors, tensor_groups_payload(tensor_group_count, tensor_groups));
      tensor_groups.clear();
      tensor_group_count = 0;
    }
  }

  // After the strings their frames name.
  void flush_stacks() {
    if (stack_table.empty()) return;
    if (!strings.empty()) write_chunk(ChunkType::Strings, strings.take());
    auto [frames, stacks] = stack_table.take();
    if (!frames.empty()) write_chunk(ChunkType::Frames, frames);
    if (!stacks.empty()) write_chunk(ChunkType::Stacks, stacks);
  }

  uint32_t add_stack(const std::vector<trace::Frame>& in) {
    for (const trace::Frame& f : in)
      if (std::max(f.file, f.function) >= string_count) {
        fail("stack frame names a string not interned");
        return 0;
      }
    const uint32_t id = stack_table.add(in);
    if (stack_table.full()) flush_stacks();
    return id;
  }

  void flush_cuda() {
    if (cuda_count == 0) return;
    write_chunk(ChunkType::Cuda, cuda_columns.take(cuda_first, cuda_count));
    cuda_first += cuda_count;
    cuda_count = 0;
  }

  uint32_t add_cuda(const trace::CudaInfo& c) {
    if (c.kernel_name >= string_count || c.capture_op >= string_count) {
      fail("CUDA record names string " + std::to_string(std::max(c.kernel_name, c.capture_op)) + " of " +
           std::to_string(string_count));
      return cuda_first + cuda_count;
    }
    cuda_columns.put(c);
    uint32_t index = cuda_first + cuda_count;
    // Strings first: a record may name one interned since the last chunk.
    if (++cuda_count == kCudaPerChunk) {
      if (!strings.empty()) write_chunk(ChunkType::Strings, strings.take());
      flush_cuda();
    }
    return index;
  }

  // After the strings its records name.
  void flush_memory() {
    if (memory.empty()) return;
    if (!strings.empty()) write_chunk(ChunkType::Strings, strings.take());
    write_chunk(ChunkType::Memory, memory.take());
    if (memory_attribute_count) {
      write_chunk(ChunkType::MemoryAttributes, memory_attributes_payload(memory_attribute_count, memory_attributes));
      memory_attributes.clear();
      memory_attribute_count = 0;
    }
  }

  void flush_events() {
    if (events.events() == 0) return;
    // Everything an event may reference goes out before the event.
    flush_metadata();
    write_chunk(ChunkType::Events, events.take());
  }

  // Whether `e` is written as it is: times within the format's range, and
  // every id it names already in the file. Memory and CUDA kinds (their
  // records' counts) and anything odd take the slow path, which says what
  // is wrong.
  bool plain(const trace::Event& e) const {
    return !finished && e.start_ns >= -kMaxAbsTimeNs && e.start_ns <= kMaxAbsTimeNs && e.end_ns >= -kMaxAbsTimeNs &&
           e.end_ns <= kMaxAbsTimeNs && e.thread < thread_counts.size() && e.stack <= stack_table.count() &&
           e.name < string_count && e.shapes < string_count && uint8_t(e.kind) <= kKindMask &&
           e.kind != trace::EventKind::Memory && !kind_has_cuda_info(uint8_t(e.kind));
  }

  // Inline: the launcher writes every event it drains through here.
  [[gnu::always_inline]] void add_event(const trace::Event& e) {
    if (plain(e)) [[likely]]
      return append(e);
    add_checked_event(e);
  }

  [[gnu::noinline]] void add_checked_event(const trace::Event& in) {
    if (finished) return fail("add_event after finish()");
    trace::Event e = in;
    if (e.start_ns < -kMaxAbsTimeNs || e.start_ns > kMaxAbsTimeNs || e.end_ns < -kMaxAbsTimeNs ||
        e.end_ns > kMaxAbsTimeNs) {
      e.start_ns = std::clamp(e.start_ns, -kMaxAbsTimeNs, kMaxAbsTimeNs);
      e.end_ns = std::clamp(e.end_ns, e.start_ns, kMaxAbsTimeNs);
      e.flags |= trace::kTruncated;
    }
    if (e.thread >= thread_counts.size())
      return fail("event for thread " + std::to_string(e.thread) + " of " + std::to_string(thread_counts.size()));
    if (e.kind == trace::EventKind::Memory && (e.arg == 0 || e.arg > memory.first + memory.count))
      return fail("memory event references record " + std::to_string(e.arg) + " of " +
                  std::to_string(memory.first + memory.count));
    if (e.stack > stack_table.count())
      return fail("event refers to stack " + std::to_string(e.stack) + " of " + std::to_string(stack_table.count()));
    if (e.name >= string_count || e.shapes >= string_count)
      return fail("event names string " + std::to_string(std::max(e.name, e.shapes)) + " of " +
                  std::to_string(string_count));
    if (uint8_t(e.kind) > kKindMask)
      return fail("event kind " + std::to_string(unsigned(e.kind)) + " does not fit the format");
    if (kind_has_cuda_info(uint8_t(e.kind)) && e.arg > uint64_t(cuda_first) + cuda_count)
      return fail("event refers to CUDA record " + std::to_string(e.arg) + " of " +
                  std::to_string(cuda_first + cuda_count));
    append(e);
  }

  // `e`, checked, into the chunk.
  [[gnu::always_inline]] void append(const trace::Event& e) {
    ++thread_counts[e.thread].events;
    ++events_written;
    if (events.append(e)) [[unlikely]]
      flush_events();
  }

  std::string footer() const {
    FooterData f;
    for (const ThreadCounts& t : thread_counts) {
      f.thread_events.push_back(t.events);
      f.thread_dropped.push_back(t.dropped);
    }
    f.window_end_ns = window_end_ns;
    f.losses = losses;
    return encode_footer(f);
  }
};

TraceWriter::TraceWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TraceWriter::~TraceWriter() = default;

Result<std::unique_ptr<TraceWriter>> TraceWriter::create(const std::string& path, const trace::Header& h) {
  auto impl = std::make_unique<Impl>();
  impl->requested = path;
  impl->window_end_ns = h.window_end_ns;
  // Never through a symlink, never into a file that is there already: the
  // output directory may be writable by others.
  int fd = -1;
  for (unsigned n = 0; n < kNameAttempts && fd < 0; ++n) {
    impl->name_index = n;
    impl->path = alternative_name(path, n);
    impl->tmp_path = impl->path + ".tmp";
    fd = create_exclusive(impl->tmp_path);
    if (fd < 0 && errno != EEXIST) return Status::error(impl->tmp_path + ": " + std::strerror(errno));
  }
  if (fd < 0)
    return Status::error(path + ".tmp: exists, and so do " + std::to_string(kNameAttempts - 1) +
                         " alternative names; nothing was written over");
  auto out = ChunkWriter::open(fd, impl->tmp_path);
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
  return std::unique_ptr<TraceWriter>(new TraceWriter(std::move(impl)));  // the constructor is private
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
  if (put_process_attributes(m.attributes, index, p)) ++m.attribute_count;
  m.added[index] = p;
  if (p.op_cost_ps || p.record_cost_ps) m.costs[index] = {p.op_cost_ps, p.record_cost_ps};
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
  m.events.add_thread();
  uint32_t index = m.threads.first + m.threads.count++;
  if (t.device >= 0) {
    put_varint(m.lanes, index);
    put_varint(m.lanes, uint64_t(t.device));
    ++m.lane_count;
  }
  return index;
}

uint32_t TraceWriter::add_cuda(const trace::CudaInfo& c) { return impl_->add_cuda(c); }

void TraceWriter::set_thread_dropped(uint32_t thread, uint64_t dropped) {
  Impl& m = *impl_;
  if (thread >= m.thread_counts.size()) return m.fail("set_thread_dropped: no thread " + std::to_string(thread));
  m.thread_counts[thread].dropped = dropped;
}

void TraceWriter::set_window_end(int64_t end_ns) { impl_->window_end_ns = end_ns; }

void TraceWriter::set_losses(const trace::Losses& losses) { impl_->losses = losses; }

void TraceWriter::set_process_cost(uint32_t process, uint32_t op_cost_ps, uint32_t record_cost_ps) {
  Impl& m = *impl_;
  if (process >= m.processes.first + m.processes.count)
    return m.fail("set_process_cost: no process " + std::to_string(process));
  m.costs[process] = {op_cost_ps, record_cost_ps};
}

void TraceWriter::set_process_role(uint32_t process, uint32_t role, int32_t role_index) {
  Impl& m = *impl_;
  auto it = m.added.find(process);
  if (it == m.added.end()) return m.fail("set_process_role: no process " + std::to_string(process));
  trace::Process& p = it->second;
  if (p.role == role && p.role_index == role_index) return;
  p.role = role;
  p.role_index = role_index;
  if (put_process_attributes(m.attributes, process, p)) ++m.attribute_count;
}

void TraceWriter::set_process_distributed(uint32_t process, int32_t rank, int32_t local_rank, int32_t world_size) {
  Impl& m = *impl_;
  auto it = m.added.find(process);
  if (it == m.added.end()) return m.fail("set_process_distributed: no process " + std::to_string(process));
  trace::Process& p = it->second;
  if (p.rank == rank && p.local_rank == local_rank && p.world_size == world_size) return;
  p.rank = rank;
  p.local_rank = local_rank;
  p.world_size = world_size;
  if (put_process_attributes(m.attributes, process, p)) ++m.attribute_count;
}

void TraceWriter::rename_to(const std::string& path) {
  Impl& m = *impl_;
  if (m.finished || path == m.requested) return;
  m.requested = path;
  m.name_index = 0;
}

void TraceWriter::add_event(const trace::Event& e) { impl_->add_event(e); }

uint32_t TraceWriter::add_memory(const trace::MemoryInfo& m) {
  Impl& w = *impl_;
  if (std::max({m.op, m.op_shapes, m.top_op, m.top_shapes, m.alloc_op, m.alloc_shapes, m.top_inputs, m.alloc_inputs}) >=
      w.string_count)
    w.fail("memory record names a string not interned");
  put_memory_record(w.memory.records, m);
  const uint32_t index = w.memory.first + w.memory.count++;
  put_memory_attributes(w.memory_attributes, &w.memory_attribute_count, index, m);
  if (w.memory.records.size() >= kMetadataChunkBytes) w.flush_memory();
  return index;
}

void TraceWriter::add_collective(const trace::CollectiveInfo& c) {
  Impl& w = *impl_;
  if (std::max({c.name, c.process_group, c.process_group_desc, c.dtype}) >= w.string_count)
    return w.fail("collective record names a string not interned");
  if (c.thread >= w.thread_counts.size())
    return w.fail("collective record for thread " + std::to_string(c.thread) + " of " +
                  std::to_string(w.thread_counts.size()));
  put_collective_record(w.collectives, c);
  ++w.collective_count;
}

void TraceWriter::add_tensor_group(const trace::TensorGroup& g) {
  Impl& w = *impl_;
  if (g.thread >= w.thread_counts.size())
    return w.fail("tensor group for thread " + std::to_string(g.thread) + " of " +
                  std::to_string(w.thread_counts.size()));
  put_tensor_group(w.tensor_groups, g);
  ++w.tensor_group_count;
}

uint32_t TraceWriter::add_stack(const std::vector<trace::Frame>& frames) { return impl_->add_stack(frames); }

Status TraceWriter::finish() {
  Impl& m = *impl_;
  if (m.finished) return Status::error(m.path + ": finish() called twice");
  m.finished = true;
  m.flush_events();
  m.flush_metadata();
  if (!m.costs.empty()) m.write_chunk(ChunkType::Costs, costs_payload(m.costs));
  m.write_chunk(ChunkType::Footer, m.footer());
  m.fail(m.out->close());
  // The name may have been taken meanwhile: another name then, never over it.
  for (unsigned n = m.name_index; m.ok() && n < kNameAttempts; ++n) {
    const std::string to = alternative_name(m.requested, n);
    if (rename_no_replace(m.tmp_path, to) == 0) {
      m.path = to;
      break;
    }
    if (errno != EEXIST || n + 1 == kNameAttempts)
      m.fail(to + ": rename from " + m.tmp_path + " failed: " + std::strerror(errno));
  }
  if (!m.ok()) {
    // A writer that failed must not leave something that looks like a trace.
    std::remove(m.tmp_path.c_str());
    const std::string& e = m.status.message();
    return Status::error(e.rfind(m.path, 0) == 0 ? e : m.path + ": " + e);
  }
  return {};
}

void TraceWriter::flush() {
  Impl& m = *impl_;
  if (m.finished || !m.ok()) return;
  m.flush_events();
  m.flush_metadata();
  m.fail(m.out->flush());
}

std::string TraceWriter::path() const { return impl_->path; }

uint64_t TraceWriter::bytes_written() const { return impl_->out->bytes_written(); }
uint64_t TraceWriter::events_written() const { return impl_->events_written; }

}  // namespace ptprof::format
