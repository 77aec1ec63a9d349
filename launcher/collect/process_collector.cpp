#include "collect/process_collector.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <span>

#include <spdlog/spdlog.h>

#include "ptprof/cuda_status.hpp"
#include "ptprof/record.hpp"
#include "ptprof/shapes.hpp"

namespace ptprof::launcher {

ProcessCollector::ProcessCollector(std::unique_ptr<RegionMapping> region, std::string file_stem,
                                   const CollectorOptions& opts, const clock::Converter& conv, WindowSink& sink)
    : region_(std::move(region)),
      header_(region_->header()),
      file_stem_(std::move(file_stem)),
      opts_(opts),
      conv_(conv),
      sink_(sink),
      arena_(*header_, wire::string_arena(region_->base, *header_)) {}

ProcessCollector::~ProcessCollector() = default;

uint64_t ProcessCollector::dropped() const {
  uint64_t d = 0;
  for (const auto& t : threads_)
    if (t.reader.valid()) d += t.reader.dropped();
  return d;
}

trace::Losses ProcessCollector::losses() const {
  trace::Losses l = seen_;
#define PTPROF_READ_HEADER_LOSS(counter, field) l.field = header_->counter.load(std::memory_order_relaxed);
  PTPROF_HEADER_LOSSES(PTPROF_READ_HEADER_LOSS)
#undef PTPROF_READ_HEADER_LOSS
  for (const auto& t : threads_) l.malformed_bytes += t.reader.corrupt_bytes;
  return l;
}

std::vector<std::string> ProcessCollector::cuda_notes() {
  const uint32_t packed = header_->cuda_status.load(std::memory_order_acquire);
  const wire::CudaStatus code = wire::cuda_status_code(packed);
  std::vector<std::string> notes;
  if (code == wire::CudaStatus::None) return notes;
  const uint32_t id = wire::cuda_status_message(packed);
  if (id >= strings_.size()) read_strings();
  notes.push_back(id && id < strings_.size() ? strings_[id] : "ptprof: CUDA status " + std::to_string(uint32_t(code)));
  if (wire::cuda_status_yielded(packed) && code != wire::CudaStatus::CuptiTaken)
    notes.emplace_back(wire::kCudaYieldedNote);
  return notes;
}

void ProcessCollector::read_strings() {
  arena_.read_new([this](std::string_view s) {
    strings_.emplace_back(s);
    cuda_notes_.push_back(s.starts_with(wire::kCudaNotePrefix));
  });
}

void ProcessCollector::read_boundaries() {
  uint32_t count = header_->boundary_count.load(std::memory_order_acquire);
  if (count - boundaries_read_ > wire::kMaxBoundaries) {
    spdlog::warn("process {}: schedule boundaries were overwritten before they were read", pid());
    boundaries_read_ = count - wire::kMaxBoundaries;
  }
  for (; boundaries_read_ < count; ++boundaries_read_) {
    const wire::Boundary& b = header_->boundaries[boundaries_read_ % wire::kMaxBoundaries];
    if (b.kind == uint32_t(wire::BoundaryKind::WindowBegin)) {
      Window w;
      w.index = b.window;
      w.begin = b.ticks;
      windows_.push_back(std::move(w));
    } else if (b.kind == uint32_t(wire::BoundaryKind::GpuFlushed)) {
      for (auto& w : windows_)
        if (w.index == b.window) w.gpu_flushed = true;
    } else if (b.kind == uint32_t(wire::BoundaryKind::WindowEnd)) {
      for (auto it = windows_.rbegin(); it != windows_.rend(); ++it) {
        if (it->index == b.window && it->end == UINT64_MAX) {
          it->end = b.ticks;
          it->end_seen = std::chrono::steady_clock::now();
          break;
        }
      }
    }
  }
}

void ProcessCollector::attach_new_threads() {
  uint32_t n = std::min(header_->thread_count.load(std::memory_order_acquire), header_->max_threads);
  while (threads_.size() < n) {
    ThreadDecode t;
    t.slot = uint32_t(threads_.size());
    threads_.push_back(std::move(t));
  }
  // Slots fill in any order (a slot whose ring could not be reserved stays
  // free), and a released slot fills again with a new thread.
  for (auto& t : threads_) {
    if (t.live) continue;
    const wire::ThreadSlot& slot = header_->threads[t.slot];
    // Retired too: a short-lived thread may have come and gone between two
    // rounds. Either way it is a new thread: the old one's slot was Free.
    const auto state = wire::SlotState(slot.state.load(std::memory_order_acquire));
    if (state != wire::SlotState::Ready && state != wire::SlotState::Retired) continue;
    if (t.reader.valid()) seen_.malformed_bytes += t.reader.corrupt_bytes;
    t.reader =
        wire::RingReader(wire::ring_control(region_->base, *header_, t.slot),
                         wire::ring_data(region_->base, *header_, t.slot), wire::slot_ring_bytes(*header_, slot));
    t.live = true;
    t.instance = uint32_t(instances_.size());
    instances_.push_back(Instance{t.slot, true, slot.tid, {}, {}});
    tid_instances_[slot.tid] = t.instance;
  }
}

// The thread in `t` exited and its ring is drained: close what it left open,
// keep its identity for the files still to be written, and give the slot back.
void ProcessCollector::retire_thread(ThreadDecode& t) {
  if (!t.stack.empty()) close_span(t, 0, t.last_ticks, trace::kTruncated);
  Instance& in = instances_[t.instance];
  const wire::ThreadSlot& slot = header_->threads[t.slot];
  in.tid = slot.tid;
  in.name = std::string(slot.name, strnlen(slot.name, sizeof slot.name));
  in.live = false;
  in.stacks = {};  // nothing of the thread is left to write
  const uint64_t d = t.reader.dropped();
  if (d > t.dropped_accounted) {
    retired_drops_.push_back({t.instance, d - t.dropped_accounted});
    t.dropped_accounted = d;
  }
  t.live = false;
  header_->threads[t.slot].state.store(uint32_t(wire::SlotState::Free), std::memory_order_release);
}

int32_t ProcessCollector::window_index(uint64_t ticks) const {
  for (size_t i = windows_.size(); i-- > 0;) {
    const Window& w = windows_[i];
    if (ticks >= w.begin && ticks < w.end) return int32_t(i);
    if (ticks >= w.end) return -1;  // after this window, before the next began
  }
  return -1;
}

int32_t ProcessCollector::window_for(uint64_t ticks) {
  int32_t i = window_index(ticks);
  if (i < 0 || !windows_[size_t(i)].done) return i;
  ++seen_.late_events;
  return -1;
}

uint64_t ProcessCollector::drain(uint64_t horizon) {
  if (finished_) return 0;
  // The agent raises in_transition while it publishes a boundary; wait for
  // the next round rather than classify against a half-written list.
  if (horizon != UINT64_MAX && header_->in_transition.load(std::memory_order_acquire)) horizon = drained_horizon_;
  read_boundaries();
  read_strings();
  attach_new_threads();
  uint64_t n = 0;
  for (auto& t : threads_) {
    if (!t.live) continue;
    // Read before draining: a thread marks its slot retired after its last record.
    const bool exited =
        header_->threads[t.slot].state.load(std::memory_order_acquire) == uint32_t(wire::SlotState::Retired);
    n += t.reader.drain([&](const wire::RecordHeader& h) { return visit(t, h, horizon); });
    if (exited && t.reader.empty()) retire_thread(t);
  }
  drained_horizon_ = std::max(drained_horizon_, horizon);
  return n;
}

bool ProcessCollector::visit(ThreadDecode& t, const wire::RecordHeader& h, uint64_t horizon) {
  using wire::RecordType;
  if (h.ts > horizon) return false;  // not yet classifiable: leave it in the ring
  t.last_ticks = std::max(t.last_ticks, h.ts);
  const wire::RecordTypeInfo* info = wire::record_type_info(h.type);
  if (info == nullptr) return true;  // a type of a later version
  if (!wire::record_size_ok(h)) {
    seen_.malformed_bytes += h.size;
    return true;
  }
  if (info->arg_is_name && h.arg >= strings_.size()) read_strings();
  switch (RecordType(h.type)) {
    case RecordType::RangePush: {
      OpenSpan s;
      s.kind = trace::EventKind::Range;
      s.start = h.ts;
      s.name = h.arg;
      open_span(t, s);
      break;
    }
    case RecordType::RangePop: {
      for (size_t i = t.stack.size(); i-- > 0;) {
        if (t.stack[i].kind == trace::EventKind::Range) {
          close_span(t, i, h.ts, 0);
          break;
        }
      }
      break;
    }
    case RecordType::Mark: {
      int32_t w = window_for(h.ts);
      if (w >= 0) {
        OpenSpan s;
        s.kind = trace::EventKind::Mark;
        s.start = h.ts;
        s.name = h.arg;
        emit(windows_[size_t(w)], t.instance, s, h.ts, 0);
      }
      break;
    }
    case RecordType::Step:
      step_record(t, h.ts, h.arg);
      break;
    case RecordType::OpBegin: {
      wire::OpBeginPayload p;
      std::memcpy(&p, reinterpret_cast<const uint8_t*>(&h) + sizeof h, sizeof p);
      OpenSpan s;
      s.kind = trace::EventKind::Op;
      s.start = h.ts;
      s.name = h.arg;
      s.handle = p.handle;
      s.seq_nr = p.seq_nr;
      s.fwd_thread_id = p.fwd_thread_id;
      s.scope = p.scope;
      s.stack = p.stack;
      if (p.flags & wire::kOpAsync) s.flags |= trace::kAsync;
      if (p.flags & wire::kOpCallerStacks) s.flags |= trace::kCallerStacks;
      if ((p.flags & wire::kOpHasShapes) && sizeof h + sizeof p + p.shapes_bytes <= h.size) {
        std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(&h) + sizeof h + sizeof p, p.shapes_bytes);
        if (auto text = shapes::shapes_text(bytes)) s.shapes = shape_id(*text);
        // The concrete inputs name what an outermost operator allocated
        // (memory events are charged to it): only those are worth the text.
        const bool outermost = std::none_of(t.stack.begin(), t.stack.end(), [](const OpenSpan& o) {
          return o.kind == trace::EventKind::Op && o.scope != uint8_t(wire::OpScope::UserScope);
        });
        if (outermost && p.scope != uint8_t(wire::OpScope::UserScope))
          if (auto text = shapes::concrete_text(bytes); text && !text->empty()) s.inputs = shape_id(*text);
      }
      open_span(t, s);
      break;
    }
    case RecordType::OpEnd: {
      wire::OpEndPayload p;
      std::memcpy(&p, reinterpret_cast<const uint8_t*>(&h) + sizeof h, sizeof p);
      for (size_t i = t.stack.size(); i-- > 0;) {
        if (t.stack[i].kind == trace::EventKind::Op && t.stack[i].handle == p.handle) {
          close_span(t, i, h.ts, 0);
          break;
        }
      }
      break;
    }
    case RecordType::CudaApi:
      cuda_api_record(t, h);
      break;
    case RecordType::GpuActivity:
      gpu_activity_record(t, h);
      break;
    case RecordType::ExternalCorrelation: {
      wire::ExternalCorrelationPayload p;
      std::memcpy(&p, reinterpret_cast<const uint8_t*>(&h) + sizeof h, sizeof p);
      external_[p.correlation_id] = p.external_id;
      cuda_seen_ = true;
      break;
    }
    case RecordType::MemoryEvent:
      memory_record(t, h);
      break;
    case RecordType::StackDef:
      stack_record(t, h);
      break;
    default:
      break;  // Pad, ThreadName and types of later versions
  }
  return true;
}

void ProcessCollector::cuda_api_record(ThreadDecode& t, const wire::RecordHeader& h) {
  cuda_seen_ = true;
  wire::CudaApiPayload p;
  std::memcpy(&p, reinterpret_cast<const uint8_t*>(&h) + sizeof h, sizeof p);
  int32_t wi = window_for(h.ts);
  if (wi < 0) return;
  Window& w = windows_[size_t(wi)];
  if (!ensure_writer(w)) return;
  trace::Event e;
  e.kind = trace::EventKind::CudaApi;
  e.start_ns = conv_.to_ns(h.ts);
  e.end_ns = conv_.to_ns(std::max(p.end_ts, h.ts));
  e.name = file_name(w, h.arg);
  e.thread = file_thread(w, t.instance);
  if (h.arg == 0) ++seen_.unnamed_events;
  trace::CudaInfo c;
  c.correlation_id = p.correlation_id;
  c.stream = p.stream;
  c.ptr = p.ptr;
  c.bytes = p.bytes;
  std::copy(std::begin(p.grid), std::end(p.grid), c.grid);
  std::copy(std::begin(p.block), std::end(p.block), c.block);
  c.result = p.result;
  c.kernel_name = p.kernel_name;
  c.family = p.family;
  c.copy_kind = p.copy_kind;
  emit_cuda(w, e, c);
}

namespace {

// CUpti_ActivityMemcpyKind, as Nsight Systems and torch.profiler name copies.
const char* memcpy_name(uint8_t kind) {
  static constexpr const char* kNames[] = {"Memcpy",      "Memcpy HtoD", "Memcpy DtoH", "Memcpy HtoA",
                                           "Memcpy AtoH", "Memcpy AtoA", "Memcpy AtoD", "Memcpy DtoA",
                                           "Memcpy DtoD", "Memcpy HtoH", "Memcpy PtoP"};
  return kind < std::size(kNames) ? kNames[kind] : "Memcpy";
}

}  // namespace

void ProcessCollector::gpu_activity_record(ThreadDecode& t, const wire::RecordHeader& h) {
  cuda_seen_ = true;
  wire::GpuActivityPayload p;
  std::memcpy(&p, reinterpret_cast<const uint8_t*>(&h) + sizeof h, sizeof p);
  int32_t wi = window_for(h.ts);
  if (wi < 0) return;
  Window& w = windows_[size_t(wi)];
  if (!ensure_writer(w)) return;
  trace::Event e;
  e.start_ns = conv_.to_ns(h.ts);
  e.end_ns = conv_.to_ns(std::max(p.end_ts, h.ts));
  trace::CudaInfo c;
  c.correlation_id = p.correlation_id;
  c.bytes = p.bytes;
  c.graph_node_id = p.graph_node_id;
  c.graph_id = p.graph_id;
  c.device = int32_t(p.device);
  c.stream = p.stream;
  c.copy_kind = p.copy_kind;
  std::copy(std::begin(p.grid), std::end(p.grid), c.grid);
  std::copy(std::begin(p.block), std::end(p.block), c.block);
  const char* fallback = nullptr;
  bool on_lane = true;
  switch (wire::GpuActivityKind(p.kind)) {
    case wire::GpuActivityKind::Kernel:
      e.kind = trace::EventKind::Kernel;
      fallback = "<unnamed kernel>";
      c.kernel_name = h.arg;
      break;
    case wire::GpuActivityKind::Memcpy:
      e.kind = trace::EventKind::Memcpy;
      fallback = memcpy_name(p.copy_kind);
      break;
    case wire::GpuActivityKind::Memset:
      e.kind = trace::EventKind::Memset;
      fallback = "Memset";
      break;
    case wire::GpuActivityKind::Sync:
      e.kind = trace::EventKind::GpuSync;
      fallback = "Synchronize";
      break;
    case wire::GpuActivityKind::Overhead:
      e.kind = trace::EventKind::GpuOverhead;
      fallback = "CUPTI overhead";
      on_lane = false;
      break;
    case wire::GpuActivityKind::RuntimeApi:
    case wire::GpuActivityKind::DriverApi:
      e.kind = trace::EventKind::CuptiApi;
      fallback = "<unnamed CUDA call>";
      c.family = uint8_t(p.kind == uint8_t(wire::GpuActivityKind::RuntimeApi) ? wire::CudaApiFamily::Runtime
                                                                              : wire::CudaApiFamily::Driver);
      on_lane = false;
      break;
    default:
      return;  // a kind of a later version
  }
  // Copies are named by their kind; everything else by its record's name.
  const bool by_kind = e.kind == trace::EventKind::Memcpy || h.arg == 0;
  e.name = by_kind ? w.writer->intern(fallback) : file_name(w, h.arg);
  if (on_lane)
    e.thread = file_lane(w, p.device, p.stream);
  else
    e.thread =
        file_thread(w, e.kind == trace::EventKind::CuptiApi ? instance_of_tid(p.thread, t.instance) : t.instance);
  emit_cuda(w, e, c);
}

// The thread (instance) a CUPTI API record names by tid; the latest
// instance with that tid, as slots are reused.
uint32_t ProcessCollector::instance_of_tid(int32_t tid, uint32_t fallback) const {
  if (tid == 0) return fallback;
  auto it = tid_instances_.find(tid);
  return it == tid_instances_.end() ? fallback : it->second;
}

uint32_t ProcessCollector::file_lane(Window& w, uint32_t device, uint32_t stream) {
  const uint64_t key = uint64_t(device) << 32 | stream;
  uint32_t& index = w.lane_map[key];
  if (!index) {
    trace::Thread th;
    th.process = 0;
    th.tid = int32_t(stream);
    th.device = int32_t(device & 0x7fffffff);
    th.name = "GPU " + std::to_string(device) + " stream " + std::to_string(stream);
    index = w.writer->add_thread(th) + 1;
  }
  return index - 1;
}

void ProcessCollector::emit_cuda(Window& w, trace::Event e, trace::CudaInfo info) {
  if (info.correlation_id != 0) {
    auto it = external_.find(info.correlation_id);
    if (it != external_.end()) {
      info.external_id = it->second;
    } else if (header_->gpu_flush.load(std::memory_order_relaxed) != 0) {
      // CUPTI may report the correlation after the activity.
      w.pending_cuda.push_back({e, info});
      return;
    }
  }
  write_cuda(w, e, info);
}

void ProcessCollector::write_cuda(Window& w, trace::Event e, trace::CudaInfo info) {
  info.kernel_name = info.kernel_name ? file_name(w, info.kernel_name) : 0;
  e.arg = uint64_t(w.writer->add_cuda(info)) + 1;
  w.writer->add_event(e);
  charge(w, e);
  ++w.events;
  ++events_total_;
}

void ProcessCollector::charge(Window& w, const trace::Event& e) {
  w.cost.charge(e.kind, header_->op_cost_ps.load(std::memory_order_relaxed),
                header_->record_cost_ps.load(std::memory_order_relaxed));
  if (e.kind == trace::EventKind::Op || cost::records_of(e.kind)) {
    w.first_ns = std::min(w.first_ns, e.start_ns);
    w.last_ns = std::max(w.last_ns, e.end_ns);
  }
}

void ProcessCollector::open_span(ThreadDecode& t, OpenSpan s) {
  s.window = window_for(s.start);
  if (s.window >= 0) ++windows_[size_t(s.window)].open_spans;
  t.stack.push_back(s);
}

// Closes stack[index] at `end`; anything still open above it never saw its
// end (a dropped record) and is closed with it, marked truncated.
void ProcessCollector::close_span(ThreadDecode& t, size_t index, uint64_t end, uint16_t extra_flags) {
  while (t.stack.size() > index) {
    OpenSpan s = t.stack.back();
    t.stack.pop_back();
    uint16_t flags = extra_flags | (t.stack.size() > index ? trace::kTruncated : 0);
    if (s.window >= 0) {
      Window& w = windows_[size_t(s.window)];
      --w.open_spans;
      if (!w.done) emit(w, t.instance, s, end, flags);
    }
  }
}

void ProcessCollector::step_record(ThreadDecode& t, uint64_t ts, uint64_t number) {
  int32_t wi = window_index(ts);
  if (wi >= 0 && windows_[size_t(wi)].done) wi = -1;  // a step is not an event: never late
  // The same step again: it restarts (the agent moves step 0 past the
  // import of torch).
  if (wi >= 0) {
    Window& w = windows_[size_t(wi)];
    if (w.step_open && w.step_number == number && w.step_slot == t.instance) {
      w.step_start = ts;
      return;
    }
  }
  // A step begins where the previous one ends, in whichever window it was.
  for (auto& w : windows_)
    if (!w.done && w.step_open && w.step_start <= ts) close_step(w, ts);
  if (wi < 0) return;
  Window& w = windows_[size_t(wi)];
  w.step_open = true;
  w.step_number = number;
  w.step_start = ts;
  w.step_slot = t.instance;
}

// Steps are kept aside and written with the window: a window holding nothing
// but steps (a shell, a helper process) gets no file.
void ProcessCollector::close_step(Window& w, uint64_t end) {
  if (!w.step_open) return;
  w.step_open = false;
  w.steps.push_back({w.step_number, w.step_start, std::min(end, w.end), w.step_slot});
}

bool ProcessCollector::ensure_writer(Window& w) {
  if (w.writer) return true;
  if (w.done) return false;  // written, or lost: never opened twice
  trace::Header h;
  h.host = opts_.host;
  h.realtime_offset_ns = opts_.realtime_offset_ns;
  h.window = w.index;
  // A window that takes its region from the start (tick 0) starts with the process.
  h.window_start_ns = w.begin ? conv_.to_ns(w.begin) : int64_t(header_->start_monotonic_ns);
  h.window_end_ns = w.end == UINT64_MAX ? 0 : conv_.to_ns(w.end);
  h.schedule = opts_.schedule;
  h.ptprof_version = PTPROF_VERSION;
  std::string path = window_path(w);
  auto writer = sink_.open(path, h);
  if (!writer) {
    spdlog::warn("cannot write {}: {}; this window is lost", path, writer.error());
    w.done = true;
    WindowFile f;
    f.path = path;
    f.pid = pid();
    f.window = w.index;
    sink_.window_failed(f, writer.error());
    return false;
  }
  w.writer = std::move(*writer);
  trace::Process p;
  p.pid = header_->pid;
  p.ppid = header_->ppid;
  p.cmdline = std::string(header_->cmdline, strnlen(header_->cmdline, sizeof header_->cmdline));
  p.start_ns = int64_t(header_->start_monotonic_ns);
  if (header_->dist_known) {
    p.rank = header_->rank;
    p.local_rank = header_->local_rank;
    p.world_size = header_->world_size;
    p.host = std::string(header_->host, strnlen(header_->host, sizeof header_->host));
  }
  w.writer->add_process(p);
  return true;
}

uint32_t ProcessCollector::file_thread(Window& w, uint32_t instance) {
  if (w.thread_map.size() <= instance) w.thread_map.resize(instance + 1, 0);
  if (!w.thread_map[instance]) {
    const Instance& in = instances_[instance];
    trace::Thread th;
    th.process = 0;
    th.tid = in.tid;
    if (in.live) {
      const wire::ThreadSlot& ts = header_->threads[in.slot];
      th.name = std::string(ts.name, strnlen(ts.name, sizeof ts.name));
    } else {
      th.name = in.name;
    }
    w.thread_map[instance] = w.writer->add_thread(th) + 1;
  }
  return w.thread_map[instance] - 1;
}

uint32_t ProcessCollector::file_name(Window& w, uint32_t id) {
  if (id >= strings_.size()) read_strings();
  if (id >= strings_.size()) return w.writer->intern("<unknown>");
  if (w.name_map.size() <= id) w.name_map.resize(strings_.size(), 0);
  if (!w.name_map[id]) w.name_map[id] = w.writer->intern(strings_[id]);
  return w.name_map[id];
}

uint32_t ProcessCollector::shape_id(const std::string& text) {
  auto [it, inserted] = shape_ids_.try_emplace(text, uint32_t(shapes_.size()));
  if (inserted) shapes_.push_back(text);
  return it->second + 1;
}

uint32_t ProcessCollector::file_shapes(Window& w, uint32_t id) {
  if (!id) return 0;
  if (w.shape_map.size() < id) w.shape_map.resize(shapes_.size(), 0);
  if (!w.shape_map[id - 1]) w.shape_map[id - 1] = w.writer->intern(shapes_[id - 1]);
  return w.shape_map[id - 1];
}

// A StackDef: the thread's stack `h.arg`, for the ops that follow it.
void ProcessCollector::stack_record(ThreadDecode& t, const wire::RecordHeader& h) {
  wire::StackDefPayload p;
  const auto* base = reinterpret_cast<const uint8_t*>(&h);
  std::memcpy(&p, base + sizeof h, sizeof p);
  const size_t need =
      sizeof h + sizeof p + (size_t(p.python_frames) + p.native_frames) * sizeof(wire::PythonFrameRecord);
  static_assert(sizeof(wire::PythonFrameRecord) == sizeof(wire::NativeFrameRecord));
  if (h.arg == 0 || h.arg > (1u << 24) || need > h.size) {
    seen_.malformed_bytes += h.size;
    return;
  }
  if (strings_.size() <= 1) read_strings();
  std::vector<trace::Frame> frames;
  const uint8_t* at = base + sizeof h + sizeof p;
  for (uint32_t i = 0; i < p.python_frames; ++i, at += sizeof(wire::PythonFrameRecord)) {
    wire::PythonFrameRecord r;
    std::memcpy(&r, at, sizeof r);
    frames.push_back(trace::Frame{trace::FrameKind::Python, r.file, r.function, r.line, 0});
  }
  for (uint32_t i = 0; i < p.native_frames; ++i, at += sizeof(wire::NativeFrameRecord)) {
    wire::NativeFrameRecord r;
    std::memcpy(&r, at, sizeof r);
    frames.push_back(trace::Frame{trace::FrameKind::Native, r.module, 0, 0, r.offset});
  }
  auto& stacks = instances_[t.instance].stacks;
  if (stacks.size() < h.arg) stacks.resize(h.arg);
  stacks[h.arg - 1] = std::move(frames);
}

// The file's index (Event::stack) of a thread's stack, its names interned.
uint32_t ProcessCollector::file_stack(Window& w, uint32_t instance, uint32_t id) {
  const auto& stacks = instances_[instance].stacks;
  if (id > stacks.size() || stacks[id - 1].empty()) return 0;
  uint32_t& index = w.stack_map[uint64_t(instance) << 32 | id];
  if (!index) {
    std::vector<trace::Frame> frames = stacks[id - 1];
    for (trace::Frame& f : frames) {
      f.file = f.file ? file_name(w, f.file) : 0;
      f.function = f.function ? file_name(w, f.function) : 0;
    }
    index = w.writer->add_stack(frames);
  }
  return index;
}

void ProcessCollector::emit(Window& w, uint32_t instance, const OpenSpan& s, uint64_t end, uint16_t flags) {
  if (!w.writer && !ensure_writer(w)) return;
  trace::Event e;
  e.kind = s.kind;
  e.start_ns = conv_.to_ns(s.start);
  e.end_ns = end == s.start ? e.start_ns : conv_.to_ns(end);  // a mark: once
  // The names and thread already in the file, without a call: this runs for
  // every event drained.
  e.name = s.name < w.name_map.size() && w.name_map[s.name] ? w.name_map[s.name] : file_name(w, s.name);
  e.thread =
      instance < w.thread_map.size() && w.thread_map[instance] ? w.thread_map[instance] - 1 : file_thread(w, instance);
  e.scope = s.scope;
  e.flags = uint16_t(s.flags | flags);
  e.shapes = s.shapes ? file_shapes(w, s.shapes) : 0;
  e.stack = s.stack ? file_stack(w, instance, s.stack) : 0;
  e.seq_nr = s.seq_nr;
  e.fwd_thread_id = s.fwd_thread_id;
  // The join key of kernels to ops (CudaInfo::external_id), once CUDA is in play.
  if (s.kind == trace::EventKind::Op && (cuda_seen_ || header_->gpu_flush.load(std::memory_order_relaxed) != 0))
    e.arg = s.handle;
  w.writer->add_event(e);
  // The agent's note on CUDA is a mark of its own, not the program's.
  if (!(s.kind == trace::EventKind::Mark && s.name < cuda_notes_.size() && cuda_notes_[s.name])) charge(w, e);
  if (s.name == 0) ++seen_.unnamed_events;  // every named record type: its name was lost
  ++w.events;
  ++events_total_;
}

std::string ProcessCollector::window_path(const Window& w) const {
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".w%03u.bin", w.index);
  return opts_.output_dir + "/" + file_stem_ + (opts_.run_id.empty() ? "" : "." + opts_.run_id) + suffix;
}

uint64_t ProcessCollector::last_ticks() const {
  uint64_t last = 0;
  for (const auto& t : threads_) last = std::max(last, t.last_ticks);
  return last;
}

void ProcessCollector::write_window(Window& w) {
  if (w.done) return;
  uint64_t end = w.end;
  if (end == UINT64_MAX) end = std::max(last_ticks(), w.begin);
  // Spans of this window still open: cut at the window's end.
  for (auto& t : threads_) {
    for (auto& s : t.stack) {
      if (s.window >= 0 && &windows_[size_t(s.window)] == &w) {
        emit(w, t.instance, s, std::max(end, s.start), trace::kTruncated);
        s.window = -1;
        --w.open_spans;
      }
    }
  }
  close_step(w, end);
  // CUDA events held for their correlation: joined with what arrived since.
  for (auto& p : w.pending_cuda) {
    if (auto it = external_.find(p.info.correlation_id); it != external_.end()) p.info.external_id = it->second;
    write_cuda(w, p.event, p.info);
  }
  w.pending_cuda.clear();
  bool any_drops = !retired_drops_.empty();
  for (auto& t : threads_) any_drops |= t.live && t.reader.dropped() > t.dropped_accounted;
  const trace::Losses now = losses();
  if (w.events == 0 && !any_drops && now == charged_) {
    w.done = true;
    return;
  }
  if (!ensure_writer(w)) return;
  for (const auto& st : w.steps) {
    trace::Event e;
    e.kind = trace::EventKind::Step;
    e.start_ns = conv_.to_ns(st.start);
    e.end_ns = conv_.to_ns(st.end);
    e.name = w.writer->intern("ProfilerStep#" + std::to_string(st.number));
    e.thread = file_thread(w, st.slot);
    e.arg = st.number;
    w.writer->add_event(e);
    ++w.events;
    ++events_total_;
  }
  // Drops are charged to the window in which they are seen.
  for (auto& t : threads_) {
    if (!t.live) continue;
    uint64_t d = t.reader.dropped();
    if (d > t.dropped_accounted) {
      retired_drops_.push_back({t.instance, d - t.dropped_accounted});
      t.dropped_accounted = d;
    }
  }
  std::vector<uint64_t> drops_by_file_thread;
  for (const RetiredDrops& r : retired_drops_) {
    const uint32_t ft = file_thread(w, r.instance);
    if (drops_by_file_thread.size() <= ft) drops_by_file_thread.resize(ft + 1, 0);
    drops_by_file_thread[ft] += r.dropped;
    w.dropped += r.dropped;
  }
  retired_drops_.clear();
  for (uint32_t ft = 0; ft < drops_by_file_thread.size(); ++ft)
    if (drops_by_file_thread[ft]) w.writer->set_thread_dropped(ft, drops_by_file_thread[ft]);
  w.writer->set_window_end(conv_.to_ns(end));
  // Losses, like drops, are charged to the window written when they are seen.
  trace::Losses delta = now;
  delta -= charged_;
  charged_ = now;
  w.writer->set_losses(delta);
  w.writer->set_process_cost(0, header_->op_cost_ps.load(std::memory_order_relaxed),
                             header_->record_cost_ps.load(std::memory_order_relaxed));
  WindowFile f;
  f.cost = w.cost;
  // The share is of the recorded steps' time, or of the span of the operators
  // and records when the window has no steps.
  // Step ticks come from shared memory a target can scribble on: the sums
  // saturate instead of overflowing.
  for (const auto& st : w.steps) {
    const int64_t begin_ns = conv_.to_ns(st.start), end_ns = conv_.to_ns(st.end);
    int64_t span = 0;
    if (__builtin_sub_overflow(end_ns, begin_ns, &span)) span = end_ns > begin_ns ? INT64_MAX : 0;
    if (span > 0 && __builtin_add_overflow(f.cost.recorded_ns, span, &f.cost.recorded_ns))
      f.cost.recorded_ns = INT64_MAX;
  }
  if (w.steps.empty() && w.last_ns > w.first_ns && __builtin_sub_overflow(w.last_ns, w.first_ns, &f.cost.recorded_ns))
    f.cost.recorded_ns = INT64_MAX;
  f.path = window_path(w);
  f.losses = delta;
  f.events = w.events;
  f.dropped = w.dropped;
  f.pid = pid();
  f.window = w.index;
  const Status finished = w.writer->finish();
  f.bytes = w.writer->bytes_written();
  // The writer may have had to take another name (trace_file.hpp).
  if (std::string written = w.writer->path(); !written.empty()) f.path = written;
  w.writer.reset();
  w.done = true;
  if (!finished.ok()) {
    spdlog::warn("cannot write {}: {}", f.path, finished.message());
    sink_.window_failed(f, finished.message());
    return;
  }
  sink_.window_written(f);
}

bool ProcessCollector::window_begun(uint32_t index) const {
  return std::any_of(windows_.begin(), windows_.end(), [&](const Window& w) { return w.index == index; });
}

bool ProcessCollector::window_open(uint32_t index) const {
  return std::any_of(windows_.begin(), windows_.end(), [&](const Window& w) { return w.index == index && !w.done; });
}

void ProcessCollector::finish_ready_windows() {
  auto now = std::chrono::steady_clock::now();
  for (auto& w : windows_) {
    if (w.done || w.end == UINT64_MAX || drained_horizon_ <= w.end) continue;
    if ((w.open_spans == 0 && !holds_for_gpu(w)) || now - w.end_seen >= opts_.grace) write_window(w);
  }
  if (now - last_flush_ < opts_.flush_interval) return;
  last_flush_ = now;
  for (auto& w : windows_)
    if (w.writer && !w.done) w.writer->flush();
}

// While the agent collects GPU activity, an ended window waits for the
// agent's word that CUPTI's buffers are flushed (BoundaryKind::GpuFlushed):
// its kernels and copies may still be on their way.
bool ProcessCollector::holds_for_gpu(const Window& w) const {
  return header_->gpu_flush.load(std::memory_order_acquire) != 0 && !w.gpu_flushed;
}

void ProcessCollector::finish() {
  if (finished_) return;
  drain(UINT64_MAX);
  for (auto& w : windows_) write_window(w);
  finished_ = true;
}

}  // namespace ptprof::launcher
