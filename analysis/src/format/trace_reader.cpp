// Walks a trace file chunk by chunk: preamble, chunk framing, checksums,
// decompression and truncation. What a payload means is chunk_decode's job.
#include <algorithm>
#include <cstring>

#include "format/byte_io.hpp"
#include "format/chunk_decode.hpp"
#include "format/collective_chunk.hpp"
#include "format/crc32c.hpp"
#include "format/cuda_chunk.hpp"
#include "format/footer_chunk.hpp"
#include "format/format_layout.hpp"
#include "format/input_file.hpp"
#include "format/memory_chunk.hpp"
#include "format/process_chunks.hpp"
#include "format/stack_chunk.hpp"
#include "format/tensor_chunk.hpp"
#include "format/zstd_codec.hpp"
#include "ptprof/analysis/trace_file.hpp"
#include "ptprof/cuda_status.hpp"

namespace ptprof::format {

using namespace detail;

namespace {

enum class Mode { Full, Summary };

// The agent's device marks among strings [from, end): Trace::gpu_devices,
// the first description of each id kept, sorted by id.
void keep_gpu_devices(trace::Trace& t, size_t from) {
  for (size_t i = from; i < t.strings.size(); ++i) {
    const int32_t id = wire::cuda_device_mark_id(t.strings[i]);
    if (id < 0) continue;
    auto at = std::lower_bound(t.gpu_devices.begin(), t.gpu_devices.end(), id,
                               [](const trace::GpuDevice& d, int32_t v) { return d.id < v; });
    if (at != t.gpu_devices.end() && at->id == id) continue;
    t.gpu_devices.insert(at, trace::GpuDevice{id, t.strings[i].substr(wire::kCudaDevicePrefix.size())});
  }
}

struct ChunkHead {
  uint64_t offset = 0;
  uint32_t type = 0;
  uint32_t flags = 0;
  uint32_t stored = 0;
  uint32_t raw = 0;
  uint32_t crc = 0;
};

// How the chunk walk ended.
struct WalkEnd {
  enum Kind { Clean, Truncated, Damaged } kind = Clean;
  uint64_t offset = 0;
  std::string what;
};

class Reader {
 public:
  Reader(std::string path, Mode mode, const EventChunkFilter* sink = nullptr)
      : path_(std::move(path)), mode_(mode), sink_(sink) {}

  Result<trace::Trace> run(std::vector<std::string>* warnings);
  Status backwards(trace::Trace& metadata, const EventChunkSink& on_events);

 private:
  bool fail(uint64_t offset, const std::string& what) {
    error_ = path_ + ": chunk at byte " + std::to_string(offset) + ": " + what;
    return false;
  }
  bool read_preamble();
  WalkEnd scan_heads();
  bool load_payload(const ChunkHead& h);
  bool process(const ChunkHead& h);
  bool finish_counts();

  std::string path_;
  Mode mode_;
  const EventChunkFilter* sink_;  // set: events go to it chunk by chunk, none are kept
  bool stopped_ = false;          // the sink wants no more
  InputFile file_;
  std::string error_;
  std::vector<ChunkHead> chunks_;
  std::string stored_, raw_;
  Decompressor zstd_;
  trace::Trace trace_;
  bool have_header_ = false;
  bool have_footer_ = false;
  FooterData footer_;
  std::vector<uint64_t> counts_;
};

bool Reader::read_preamble() {
  uint8_t pre[kPreambleBytes];
  size_t n = size_t(std::min<uint64_t>(file_.size(), kPreambleBytes));
  if (!file_.read(0, pre, n)) {
    error_ = path_ + ": read error";
    return false;
  }
  if (n < sizeof kMagic || std::memcmp(pre, kMagic, sizeof kMagic) != 0) {
    bool prefix = n > 0 && std::memcmp(pre, kMagic, std::min(n, sizeof kMagic)) == 0;
    error_ = path_ + (prefix ? ": truncated at byte " + std::to_string(n) + " (inside the preamble)"
                             : ": not a ptprof trace file (bad magic)");
    return false;
  }
  if (n < kPreambleBytes) {
    error_ = path_ + ": truncated at byte " + std::to_string(n) + " (inside the preamble)";
    return false;
  }
  uint32_t version = get_u32(pre + 8);
  if (version != kFormatVersion) {
    error_ = path_ + ": format version " + std::to_string(version) + " is not supported (this ptprof reads version " +
             std::to_string(kFormatVersion) + ")";
    return false;
  }
  return true;
}

// Reads only the 24-byte chunk headers, so the whole file's shape (and the
// footer's place) is known before any payload is decoded.
WalkEnd Reader::scan_heads() {
  uint64_t off = kPreambleBytes;
  const uint64_t size = file_.size();
  while (off < size) {
    if (size - off < kChunkHeaderBytes) return {WalkEnd::Truncated, off, "incomplete chunk header"};
    uint8_t b[kChunkHeaderBytes];
    if (!file_.read(off, b, sizeof b)) return {WalkEnd::Damaged, off, "read error"};
    if (crc32c(b, 20) != get_u32(b + 20)) return {WalkEnd::Damaged, off, "header checksum mismatch"};
    ChunkHead h{off, get_u32(b), get_u32(b + 4), get_u32(b + 8), get_u32(b + 12), get_u32(b + 16)};
    if (h.flags & ~uint32_t(kChunkZstd)) return {WalkEnd::Damaged, off, "unknown chunk flags"};
    if (h.raw > kMaxChunkRawBytes)
      return {WalkEnd::Damaged, off, "chunk size " + std::to_string(h.raw) + " exceeds the limit"};
    if (!(h.flags & kChunkZstd) && h.stored != h.raw)
      return {WalkEnd::Damaged, off, "stored and raw sizes differ in an uncompressed chunk"};
    if (h.stored > size - off - kChunkHeaderBytes)
      return {WalkEnd::Truncated, off, "chunk runs past the end of the file"};
    chunks_.push_back(h);
    off += kChunkHeaderBytes + h.stored;
    if (h.type == uint32_t(ChunkType::Footer) && off != size) return {WalkEnd::Damaged, off, "data after the footer"};
  }
  return {};
}

bool Reader::load_payload(const ChunkHead& h) {
  stored_.resize(h.stored);
  if (!file_.read(h.offset + kChunkHeaderBytes, stored_.data(), h.stored)) return fail(h.offset, "read error");
  if (crc32c(stored_.data(), stored_.size()) != h.crc) return fail(h.offset, "checksum mismatch");
  if (h.flags & kChunkZstd) {
    if (Status s = zstd_.decompress(stored_, h.raw, raw_); !s.ok()) return fail(h.offset, s.message());
  } else {
    raw_.swap(stored_);
  }
  return true;
}

bool Reader::process(const ChunkHead& h) {
  auto type = ChunkType(h.type);
  if (!have_header_ && type != ChunkType::Header) return fail(h.offset, "the first chunk is not a header chunk");
  if (have_header_ && type == ChunkType::Header) return fail(h.offset, "a second header chunk");
  // Unknown chunk types come from later writers and are skipped unread.
  const bool known = (h.type >= uint32_t(ChunkType::Header) && h.type <= uint32_t(ChunkType::Tensors));
  if (!known) return true;
  if ((type == ChunkType::Events || type == ChunkType::Memory || type == ChunkType::MemoryAttributes) &&
      mode_ == Mode::Summary)
    return true;
  if (!load_payload(h)) return false;
  Cursor c(reinterpret_cast<const uint8_t*>(raw_.data()), raw_.size());
  Status e;
  switch (type) {
    case ChunkType::Header:
      e = decode_header(c, trace_.header);
      have_header_ = true;
      break;
    case ChunkType::Strings: {
      const size_t before = trace_.strings.size();
      e = decode_strings(c, trace_);
      if (e.ok()) keep_gpu_devices(trace_, before);
      break;
    }
    case ChunkType::Processes:
      e = decode_processes(c, trace_);
      break;
    case ChunkType::Threads:
      e = decode_threads(c, trace_);
      break;
    case ChunkType::Events:
      e = decode_events(c, trace_, counts_);
      if (e.ok() && sink_) {
        stopped_ = !(*sink_)(trace_, trace_.events);
        trace_.events.clear();
      }
      break;
    case ChunkType::ProcessAttributes:
      e = decode_process_attributes(c, trace_);
      break;
    case ChunkType::Costs:
      e = decode_costs(c, trace_);
      break;
    case ChunkType::Footer:
      e = decode_footer(c, footer_);
      have_footer_ = true;
      break;
    case ChunkType::Cuda:
      e = decode_cuda(c, trace_);
      break;
    case ChunkType::GpuLanes:
      e = decode_gpu_lanes(c, trace_);
      break;
    case ChunkType::Memory:
      e = decode_memory(c, trace_);
      break;
    case ChunkType::MemoryAttributes:
      e = decode_memory_attributes(c, trace_);
      break;
    case ChunkType::Collectives:
      e = decode_collectives(c, trace_);
      break;
    case ChunkType::Tensors:
      e = decode_tensor_groups(c, trace_);
      break;
    case ChunkType::Frames:
      e = decode_frames(c, trace_);
      break;
    case ChunkType::Stacks:
      e = decode_stacks(c, trace_);
      break;
  }
  return e.ok() || fail(h.offset, e.message());
}

// Thread::events: what was decoded (full read) or what the footer says
// (summary); a full read also checks the two agree.
bool Reader::finish_counts() {
  const size_t n = trace_.threads.size();
  counts_.resize(n, 0);
  if (have_footer_) {
    uint64_t off = chunks_.back().offset;
    if (footer_.thread_events.size() != n)
      return fail(off, "footer counts " + std::to_string(footer_.thread_events.size()) + " threads, the file has " +
                           std::to_string(n));
    for (size_t i = 0; i < n; ++i) {
      if (mode_ == Mode::Full && footer_.thread_events[i] != counts_[i])
        return fail(off, "footer counts " + std::to_string(footer_.thread_events[i]) + " events for thread " +
                             std::to_string(i) + ", the file holds " + std::to_string(counts_[i]));
      trace_.threads[i].events = footer_.thread_events[i];
      trace_.threads[i].dropped = footer_.thread_dropped[i];
    }
    trace_.header.window_end_ns = footer_.window_end_ns;
    trace_.losses = footer_.losses;
  } else {
    for (size_t i = 0; i < n; ++i) trace_.threads[i].events = counts_[i];
  }
  return true;
}

Result<trace::Trace> Reader::run(std::vector<std::string>* warnings) {
  auto failed = [&]() -> Result<trace::Trace> { return Status::error(error_); };
  if (Status opened = file_.open(path_); !opened.ok()) return opened;
  if (!read_preamble()) return failed();
  WalkEnd end = scan_heads();

  // Reserve from the footer, bounded by what the chunks could hold, so a
  // corrupted count cannot make us allocate more than the file justifies.
  if (mode_ == Mode::Full && !sink_ && end.kind == WalkEnd::Clean && !chunks_.empty() &&
      chunks_.back().type == uint32_t(ChunkType::Footer)) {
    uint64_t bound = 0;
    for (const auto& h : chunks_)
      if (h.type == uint32_t(ChunkType::Events)) bound += h.raw / (kEventColumnsRequired - 1);
    if (load_payload(chunks_.back())) {
      FooterData f;
      Cursor c(reinterpret_cast<const uint8_t*>(raw_.data()), raw_.size());
      if (decode_footer(c, f).ok()) trace_.events.reserve(size_t(std::min(f.total_events, bound)));
    }
    error_.clear();  // a bad footer is reported when it is reached in order
  }

  for (const auto& h : chunks_) {
    if (!process(h)) return failed();
    if (stopped_) return std::move(trace_);
  }
  if (end.kind == WalkEnd::Damaged) {
    fail(end.offset, end.what);
    return failed();
  }
  if (!have_header_) {
    error_ = path_ + ": truncated at byte " + std::to_string(end.offset ? end.offset : file_.size()) +
             " before the header chunk";
    return failed();
  }
  if (!have_footer_) {
    uint64_t at = end.kind == WalkEnd::Truncated ? end.offset : file_.size();
    if (mode_ == Mode::Summary) {
      // Without a footer the counts live only in the events: decode them.
      Reader full(path_, Mode::Full);
      auto t = full.run(warnings);
      if (t) {
        t->events.clear();
        t->events.shrink_to_fit();
      }
      return t;
    }
    uint64_t read = 0;  // counted per thread: a streaming read keeps no events
    for (uint64_t n : counts_) read += n;
    if (warnings)
      warnings->push_back(path_ + ": truncated at byte " + std::to_string(at) + "; " + std::to_string(read) +
                          " events read");
  }
  if (!finish_counts()) return failed();
  return std::move(trace_);
}

// The event chunks in reverse: the file was read once already (the metadata
// is complete), so any failure now means it changed since.
Status Reader::backwards(trace::Trace& metadata, const EventChunkSink& on_events) {
  if (Status opened = file_.open(path_); !opened.ok()) return opened;
  if (!read_preamble()) return Status::error(error_);
  if (WalkEnd end = scan_heads(); end.kind == WalkEnd::Damaged) {
    fail(end.offset, end.what);
    return Status::error(error_);
  }
  metadata.events.clear();
  for (auto h = chunks_.rbegin(); h != chunks_.rend(); ++h) {
    if (h->type != uint32_t(ChunkType::Events)) continue;
    if (!load_payload(*h)) return Status::error(error_);
    Cursor c(reinterpret_cast<const uint8_t*>(raw_.data()), raw_.size());
    if (Status e = decode_events(c, metadata, counts_); !e.ok()) {
      fail(h->offset, e.message());
      return Status::error(error_);
    }
    on_events(metadata, metadata.events);
    metadata.events.clear();
  }
  return Status::ok_status();
}

}  // namespace

Result<trace::Trace> read_trace(const std::string& path, std::vector<std::string>* warnings) {
  return Reader(path, Mode::Full).run(warnings);
}

Result<trace::Trace> read_trace_streaming(const std::string& path, const EventChunkSink& on_events,
                                          std::vector<std::string>* warnings) {
  const EventChunkFilter all = [&](const trace::Trace& metadata, const std::vector<trace::Event>& events) {
    on_events(metadata, events);
    return true;
  };
  return Reader(path, Mode::Full, &all).run(warnings);
}

Result<trace::Trace> read_trace_streaming_while(const std::string& path, const EventChunkFilter& on_events,
                                                std::vector<std::string>* warnings) {
  return Reader(path, Mode::Full, &on_events).run(warnings);
}

Status read_events_backwards(const std::string& path, trace::Trace& metadata, const EventChunkSink& on_events) {
  return Reader(path, Mode::Full).backwards(metadata, on_events);
}

Result<trace::Trace> read_trace_summary(const std::string& path, std::vector<std::string>* warnings) {
  return Reader(path, Mode::Summary).run(warnings);
}

}  // namespace ptprof::format
