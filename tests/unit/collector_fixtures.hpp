// What the collector tests drive a ProcessCollector and its stages with: a
// process region in anonymous memory laid out by the same ABI as the agent's
// (ptprof/shm_abi.hpp), rings written through the agent's own wire::emit, a
// WindowSink that keeps each window's trace in memory (TraceWriterForTesting),
// and the tables a stage looks ids up in (StageFixture).
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <catch2/catch.hpp>

#include "collect/process_collector.hpp"
#include "collect/record_decoder.hpp"
#include "collect/session.hpp"
#include "collect/window_sink.hpp"
#include "collect/window_trace.hpp"
#include "ptprof/clock.hpp"
#include "ptprof/record_emit.hpp"
#include "ptprof/shm_abi.hpp"
#include "ptprof/string_arena.hpp"

namespace ptprof::testing {

// A trace kept in memory, as TraceWriter would write it.
class TraceWriterForTesting final : public format::TraceSink {
 public:
  explicit TraceWriterForTesting(trace::Trace* out, std::string* renamed = nullptr) : out_(out), renamed_(renamed) {}
  uint32_t intern(std::string_view s) override {
    for (size_t i = 0; i < out_->strings.size(); ++i)
      if (out_->strings[i] == s) return uint32_t(i);
    out_->strings.emplace_back(s);
    return uint32_t(out_->strings.size() - 1);
  }
  uint32_t add_process(const trace::Process& p) override {
    out_->processes.push_back(p);
    return uint32_t(out_->processes.size() - 1);
  }
  uint32_t add_thread(const trace::Thread& t) override {
    out_->threads.push_back(t);
    return uint32_t(out_->threads.size() - 1);
  }
  uint32_t add_cuda(const trace::CudaInfo& c) override {
    out_->cuda.push_back(c);
    return uint32_t(out_->cuda.size() - 1);
  }
  void set_thread_dropped(uint32_t thread, uint64_t dropped) override { out_->threads.at(thread).dropped = dropped; }
  void set_losses(const trace::Losses& losses) override { out_->losses = losses; }
  void set_window_end(int64_t end_ns) override { out_->header.window_end_ns = end_ns; }
  void add_event(const trace::Event& e) override { out_->events.push_back(e); }
  uint32_t add_memory(const trace::MemoryInfo& m) override {
    out_->memory.push_back(m);
    return uint32_t(out_->memory.size() - 1);
  }
  void add_collective(const trace::CollectiveInfo& c) override { out_->collectives.push_back(c); }
  void add_tensor_group(const trace::TensorGroup& g) override { out_->tensor_groups.push_back(g); }
  void set_process_cost(uint32_t process, uint32_t op_cost_ps, uint32_t record_cost_ps) override {
    out_->processes.at(process).op_cost_ps = op_cost_ps;
    out_->processes.at(process).record_cost_ps = record_cost_ps;
  }
  void set_process_role(uint32_t process, uint32_t role, int32_t role_index) override {
    out_->processes.at(process).role = role;
    out_->processes.at(process).role_index = role_index;
  }
  void set_process_distributed(uint32_t process, int32_t rank, int32_t local_rank, int32_t world_size) override {
    out_->processes.at(process).rank = rank;
    out_->processes.at(process).local_rank = local_rank;
    out_->processes.at(process).world_size = world_size;
  }
  uint32_t add_stack(const std::vector<trace::Frame>& frames) override {
    trace::Stack s;
    for (const trace::Frame& f : frames) {
      auto it = std::find(out_->frames.begin(), out_->frames.end(), f);
      if (it == out_->frames.end()) it = out_->frames.insert(out_->frames.end(), f);
      s.frames.push_back(uint32_t(it - out_->frames.begin()));
    }
    auto it = std::find(out_->stacks.begin(), out_->stacks.end(), s);
    if (it == out_->stacks.end()) it = out_->stacks.insert(out_->stacks.end(), s);
    return uint32_t(it - out_->stacks.begin()) + 1;
  }
  void rename_to(const std::string& path) override {
    if (renamed_) *renamed_ = path;
  }
  Status finish() override { return {}; }
  uint64_t bytes_written() const override { return 0; }

 private:
  trace::Trace* out_;
  std::string* renamed_;
};

class MemorySink final : public launcher::WindowSink {
 public:
  Result<std::unique_ptr<format::TraceSink>> open(const std::string& path, const trace::Header& header) override {
    trace::Trace& t = traces[path];
    t.header = header;
    return std::unique_ptr<format::TraceSink>(std::make_unique<TraceWriterForTesting>(&t, &renamed[path]));
  }
  void window_written(const launcher::WindowFile& f) override { written.push_back(f); }

  std::map<std::string, trace::Trace> traces;  // by path
  std::map<std::string, std::string> renamed;  // by path: the name finish() was told to give it
  std::vector<launcher::WindowFile> written;
};

// A process region as an agent creates it, with `threads` registered
// threads, each with a small ring.
class SyntheticRegion {
 public:
  static constexpr uint64_t kRingBytes = 4096;

  explicit SyntheticRegion(uint32_t threads) {
    const wire::RegionLayout layout = wire::region_layout(kRingBytes, wire::kMaxThreads);
    void* p = ::mmap(nullptr, layout.total_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mapping_ = std::make_unique<launcher::RegionMapping>();
    mapping_->base = p;
    mapping_->bytes = layout.total_bytes;
    header_ = std::construct_at(static_cast<wire::ProcessHeader*>(p));
    header_->magic = wire::kProcessMagic;
    header_->version = wire::kWireVersion;
    header_->pid = 4242;
    header_->ppid = 1;
    header_->max_threads = wire::kMaxThreads;
    header_->ring_bytes = kRingBytes;
    header_->strings_offset = layout.strings_offset;
    header_->strings_capacity = layout.strings_capacity;
    header_->rings_offset = layout.rings_offset;
    arena_.emplace(*header_, wire::string_arena(p, *header_));
    for (uint32_t i = 0; i < threads; ++i) {
      header_->threads[i].tid = int32_t(100 + i);
      header_->threads[i].state.store(uint32_t(wire::SlotState::Ready));
      rings_.emplace_back(wire::ring_control(p, *header_, i), wire::ring_data(p, *header_, i), kRingBytes);
    }
    header_->thread_count.store(threads);
  }

  wire::ProcessHeader& header() { return *header_; }
  void* base() const { return mapping_->base; }
  wire::RingWriter& ring(uint32_t thread) { return rings_.at(thread); }
  uint32_t name(std::string_view s) { return arena_->append(s).id; }
  void boundary(wire::BoundaryKind kind, uint64_t ticks, uint32_t window) {
    const uint32_t n = header_->boundary_count.load();
    header_->boundaries[n] = wire::Boundary{ticks, uint32_t(kind), window, 0};
    header_->boundary_count.store(n + 1);
  }
  // The mapping, for the collector to own; call once.
  std::unique_ptr<launcher::RegionMapping> take() { return std::move(mapping_); }

 private:
  std::unique_ptr<launcher::RegionMapping> mapping_;
  wire::ProcessHeader* header_ = nullptr;
  std::optional<wire::StringArenaWriter> arena_;
  std::vector<wire::RingWriter> rings_;
};

// One ring in ordinary memory: records written through wire::emit (or raw,
// as a damaged agent might), read back and decoded as the collector does.
class SyntheticRing {
 public:
  static constexpr uint64_t kBytes = 4096;

  wire::RingWriter& writer() { return writer_; }
  // A record of `size` bytes (header included) whose payload is zeros.
  void raw(wire::RecordType type, uint16_t size, uint32_t arg, uint64_t ts) {
    uint8_t* p = writer_.reserve(size);
    REQUIRE(p != nullptr);
    std::memset(p, 0, size);
    const wire::RecordHeader h{uint16_t(type), size, arg, ts};
    std::memcpy(p, &h, sizeof h);
    writer_.commit(size);
  }
  // Every record decoded since the last call: what decode_record handed
  // over, its typed event as one of the decoded:: types.
  using Event = std::variant<launcher::decoded::Skipped, launcher::decoded::Malformed, launcher::decoded::RangePush,
                             launcher::decoded::RangePop, launcher::decoded::Mark, launcher::decoded::Step,
                             launcher::decoded::OpBegin, launcher::decoded::OpEnd, launcher::decoded::CudaApiCall,
                             launcher::decoded::GpuActivity, launcher::decoded::Correlation, launcher::decoded::Memory,
                             launcher::decoded::StackDef, launcher::decoded::Collective, launcher::decoded::TensorGroup,
                             launcher::decoded::GraphNode>;
  struct Decoded {
    launcher::decoded::Record record;
    Event event;
  };
  std::vector<Decoded> decode_all() {
    std::vector<Decoded> out;
    reader_.drain([&](const wire::RecordHeader& h) {
      launcher::decode_record(h, [&](const launcher::decoded::Record& r, const auto& event) {
        out.push_back({r, Event(event)});
      });
      return true;
    });
    return out;
  }

 private:
  wire::RingControl control_;
  alignas(64) uint8_t data_[kBytes] = {};
  wire::RingWriter writer_{&control_, data_, kBytes};
  wire::RingReader reader_{&control_, data_, kBytes};
};

// The tables a collector stage looks the process's ids up in, over a
// synthetic region, and one window's trace open into `out`.
struct StageFixture {
  SyntheticRegion region{2};                      // threads 0 and 1: tids 100 and 101
  clock::Converter conv{clock::Kind::Monotonic};  // ticks are ns
  launcher::ProcessNames names{region.header(), wire::string_arena(region.base(), region.header())};
  launcher::ShapeTexts shapes;
  launcher::ThreadTable threads{region.header(), region.base()};
  launcher::ProcessContext context{names, shapes, threads, region.header(), conv};
  trace::Trace out;
  launcher::WindowTrace trace;

  StageFixture() {
    threads.attach_new();
    trace.open(std::make_unique<TraceWriterForTesting>(&out), context);
  }
  const std::string& text(uint32_t file_id) const { return out.strings.at(file_id); }
};

}  // namespace ptprof::testing
