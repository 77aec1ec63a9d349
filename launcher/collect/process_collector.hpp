// Drains one process region: its string arena, its thread rings and its
// schedule boundaries; pairs begin/end records into spans; sorts events into
// schedule windows by timestamp and streams each window into its trace file.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "collect/session.hpp"
#include "collect/window_sink.hpp"
#include "ptprof/analysis/trace_file.hpp"
#include "ptprof/clock.hpp"
#include "ptprof/cost.hpp"
#include "ptprof/ring.hpp"
#include "ptprof/string_arena.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::launcher {

struct CollectorOptions {
  std::string output_dir;
  std::string host;      // safe as a file name component (run_names.hpp)
  std::string run_id;    // in every file name: unique per run; empty in tests
  std::string schedule;  // for the file header
  int64_t realtime_offset_ns = 0;
  // How long a window waits, after its end, for spans that began inside it
  // to end (the scope around the optimizer step, say) before it is written
  // with those spans cut at the window's end.
  std::chrono::milliseconds grace{2000};
  // How often the windows being written are flushed to their .tmp files, so
  // that a launcher killed mid-run leaves them readable up to that point.
  std::chrono::milliseconds flush_interval{500};
};

class ProcessCollector {
 public:
  ProcessCollector(std::unique_ptr<RegionMapping> region, std::string file_stem, const CollectorOptions& opts,
                   const clock::Converter& conv, WindowSink& sink);
  ~ProcessCollector();

  // Drains everything committed with a timestamp <= horizon (raw ticks).
  // Returns the number of records consumed.
  uint64_t drain(uint64_t horizon);
  // Writes out windows whose end has been drained past; flushes the others
  // every opts.flush_interval.
  void finish_ready_windows();
  // The process is gone: drain all, close open spans, write every window.
  void finish();

  int32_t pid() const { return header_->pid; }
  bool closed_flag() const { return header_->closed.load(std::memory_order_acquire) != 0; }
  bool finished() const { return finished_; }
  uint64_t events() const { return events_total_; }
  // Whether window `index` began in this process, and is not yet written.
  bool window_begun(uint32_t index) const;
  bool window_open(uint32_t index) const;
  uint64_t dropped() const;
  // Threads seen, each reuse of a slot by a new thread counting as one.
  uint32_t threads() const { return uint32_t(instances_.size()); }
  // Everything this process lost so far besides ring drops (the ledger).
  trace::Losses losses() const;
  // The agent's lines on CUDA (cuda_status.hpp): none when the process has
  // no CUDA in it; its status; that it yielded CUPTI in some window.
  std::vector<std::string> cuda_notes();

 private:
  struct OpenSpan {
    uint64_t start = 0;  // ticks
    uint64_t handle = 0;
    int64_t seq_nr = -1;
    uint64_t fwd_thread_id = 0;
    uint32_t name = 0;    // arena id
    uint32_t shapes = 0;  // shapes_ id + 1, 0 when none
    uint32_t inputs = 0;  // shapes_ id + 1 of the concrete inputs (outermost operators only), 0 when none
    uint32_t stack = 0;   // the thread's stack id (Instance::stacks), 0 when none
    int32_t window = -1;  // index into windows_, -1: not recorded in any
    trace::EventKind kind = trace::EventKind::Op;
    uint8_t scope = 0;
    uint16_t flags = 0;
  };
  // One thread slot of the region. Slots are reused: a thread that exited
  // is retired (its ring drained, its open spans closed) and the slot is
  // released to the agent; the next thread in it is another instance.
  struct ThreadDecode {
    wire::RingReader reader;
    uint32_t slot = 0;
    uint32_t instance = 0;  // index into instances_ of the thread now in the slot
    bool live = false;      // a thread occupies the slot (attached, not yet retired)
    std::vector<OpenSpan> stack;
    uint64_t dropped_accounted = 0;
    uint64_t last_ticks = 0;
  };
  // A thread as the trace files know it.
  struct Instance {
    uint32_t slot = 0;
    bool live = true;
    int32_t tid = 0;
    std::string name;  // read from the slot while live, kept when retired
    // The thread's call stacks (StackDef records) by id - 1; frames name arena ids.
    std::vector<std::vector<trace::Frame>> stacks;
  };
  struct Window {
    uint32_t index = 0;
    uint64_t begin = 0;
    uint64_t end = UINT64_MAX;  // ticks; max while open
    std::unique_ptr<format::TraceSink> writer;
    std::vector<uint32_t> name_map;                    // arena id -> file string id
    std::vector<uint32_t> shape_map;                   // shapes id -> file string id
    std::vector<uint32_t> thread_map;                  // instance -> file thread index + 1
    std::unordered_map<uint64_t, uint32_t> stack_map;  // instance << 32 | stack id -> Event::stack
    uint32_t open_spans = 0;
    bool step_open = false;
    uint64_t step_number = 0;
    uint64_t step_start = 0;
    uint32_t step_slot = 0;
    struct Step {
      uint64_t number, start, end;
      uint32_t slot;
    };
    std::vector<Step> steps;
    bool done = false;
    std::chrono::steady_clock::time_point end_seen{};
    uint64_t events = 0;
    uint64_t dropped = 0;
    cost::Tally cost;                                   // what its events cost the target (cost.hpp)
    int64_t first_ns = INT64_MAX, last_ns = INT64_MIN;  // its events' span: the recorded time without steps
    bool gpu_flushed = false;                           // the agent's GpuFlushed boundary for it arrived
    std::unordered_map<uint64_t, uint32_t> lane_map;    // (device << 32 | stream) -> file thread index + 1
    // CUDA events whose launching op is not known yet (their external
    // correlation may arrive later): written with the window.
    struct PendingCuda {
      trace::Event event;  // name and thread already file ids
      trace::CudaInfo info;
    };
    std::vector<PendingCuda> pending_cuda;
  };

  // Charges an event written to `w` with this process's per-event costs.
  void charge(Window& w, const trace::Event& e);
  void read_strings();
  void read_boundaries();
  void attach_new_threads();
  void retire_thread(ThreadDecode& t);
  bool visit(ThreadDecode& t, const wire::RecordHeader& h, uint64_t horizon);
  // The window whose span of ticks holds `ticks`, -1 when none; a window
  // already written counts the event as late and gives -1 too.
  int32_t window_for(uint64_t ticks);
  int32_t window_index(uint64_t ticks) const;
  std::string window_path(const Window& w) const;
  void open_span(ThreadDecode& t, OpenSpan s);
  void close_span(ThreadDecode& t, size_t index, uint64_t end, uint16_t extra_flags);
  void emit(Window& w, uint32_t instance, const OpenSpan& s, uint64_t end, uint16_t flags);
  void step_record(ThreadDecode& t, uint64_t ts, uint64_t number);
  void cuda_api_record(ThreadDecode& t, const wire::RecordHeader& h);
  void gpu_activity_record(ThreadDecode& t, const wire::RecordHeader& h);
  // Writes a CUDA event (e.name, e.thread: file ids; info.kernel_name: arena
  // id) now when its launching op is known or cannot be, else at the
  // window's end.
  void emit_cuda(Window& w, trace::Event e, trace::CudaInfo info);
  void write_cuda(Window& w, trace::Event e, trace::CudaInfo info);
  uint32_t file_lane(Window& w, uint32_t device, uint32_t stream);
  // The slot of the thread with kernel id `tid`, or `fallback`.
  uint32_t instance_of_tid(int32_t tid, uint32_t fallback) const;
  bool holds_for_gpu(const Window& w) const;
  // A MemoryEvent record (process_collector_memory.cpp).
  void memory_record(ThreadDecode& t, const wire::RecordHeader& h);
  void close_step(Window& w, uint64_t end);
  bool ensure_writer(Window& w);
  uint32_t file_thread(Window& w, uint32_t instance);
  uint32_t file_name(Window& w, uint32_t id);
  uint32_t file_shapes(Window& w, uint32_t id);
  // The shapes_ id + 1 of `text`, interned.
  uint32_t shape_id(const std::string& text);
  uint32_t file_stack(Window& w, uint32_t instance, uint32_t id);
  void stack_record(ThreadDecode& t, const wire::RecordHeader& h);
  void write_window(Window& w);
  uint64_t last_ticks() const;

  std::unique_ptr<RegionMapping> region_;
  wire::ProcessHeader* header_;
  std::string file_stem_;
  const CollectorOptions& opts_;
  const clock::Converter& conv_;
  WindowSink& sink_;

  std::vector<std::string> strings_{std::string()};  // arena id -> text
  // Per id: whether it is the agent's note on CUDA (not charged), so that a
  // drained mark need not compare its name every time.
  std::vector<bool> cuda_notes_{false};
  wire::StringArenaReader arena_;
  std::vector<std::string> shapes_;
  std::unordered_map<std::string, uint32_t> shape_ids_;
  uint32_t boundaries_read_ = 0;
  std::vector<Window> windows_;
  std::vector<ThreadDecode> threads_;  // by slot
  std::vector<Instance> instances_;
  struct RetiredDrops {
    uint32_t instance;
    uint64_t dropped;
  };
  std::vector<RetiredDrops> retired_drops_;  // drops of retired threads not yet charged to a window
  uint64_t drained_horizon_ = 0;
  uint64_t events_total_ = 0;
  // Blocks allocated and not yet freed, by device and address, across
  // windows: a free is matched to its allocation whichever window saw it.
  struct LiveBlock {
    uint64_t ticks = 0;
    uint32_t op = 0;      // arena id of the innermost span's name, 0 = none
    uint32_t shapes = 0;  // shapes_ id + 1, 0 = none
    uint32_t inputs = 0;  // shapes_ id + 1 of its concrete inputs, 0 = none
  };
  struct BlockKey {
    uint64_t ptr;
    int16_t device;  // device_type << 8 | device_index
    bool operator==(const BlockKey&) const = default;
  };
  struct BlockKeyHash {
    size_t operator()(const BlockKey& k) const {
      return std::hash<uint64_t>{}(k.ptr ^ (uint64_t(uint16_t(k.device)) << 48));
    }
  };
  std::unordered_map<BlockKey, LiveBlock, BlockKeyHash> live_blocks_;
  // CUDA segments (MemorySource other than Torch) live in the process,
  // windows or not, by address (or handle) and source; what each device
  // holds of them; and torch's last allocated total of each device, which
  // a segment's event carries so that the timeline does not drop to 0.
  struct LiveSegment {
    LiveBlock block;
    int64_t bytes = 0;
    int8_t device = -1;
  };
  std::unordered_map<BlockKey, LiveSegment, BlockKeyHash> live_segments_;
  std::unordered_map<int8_t, int64_t> segment_reserved_;
  std::unordered_map<int8_t, int64_t> cuda_allocated_;
  // A CUDA segment's (process_collector_memory.cpp): keeps the live segments
  // and fills in the device, the size of a free and the totals; false when
  // the event is not written (the free of a segment never seen allocated).
  bool segment_record(wire::MemoryEventPayload& p, const LiveBlock& here, LiveBlock* allocation);
  trace::Losses seen_;     // counted here; the header's counters are added by losses()
  trace::Losses charged_;  // already written into window files
  bool finished_ = false;
  // CUDA: correlation id -> the launching op's handle (ExternalCorrelation
  // records), and whether this process has shown any CUDA activity (then ops
  // carry their handle in Event::arg, for the join).
  std::unordered_map<uint64_t, uint64_t> external_;
  bool cuda_seen_ = false;
  std::unordered_map<int32_t, uint32_t> tid_instances_;  // tid -> its latest instance
  std::chrono::steady_clock::time_point last_flush_ = std::chrono::steady_clock::now();
};

}  // namespace ptprof::launcher
