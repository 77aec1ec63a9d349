// SnapshotBuilder: PyTorch's snapshot dict from ptprof's memory events
// (memory_snapshot.hpp), written with pickle_writer.hpp.
#include "ptprof/analysis/memory_snapshot.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "memory/memory_growth.hpp"
#include "memory/pickle_writer.hpp"
#include "ptprof/out_of_memory.hpp"
#include "stacks/stack_attribution.hpp"

namespace ptprof::memory {

namespace {

using pickle::Dict;
using pickle::List;
using pickle::Value;

// A free is written as torch writes one: free_requested, then free_completed.
enum class SnapshotAction { Alloc, FreeRequested, Free, SegmentAlloc, SegmentFree, Oom };

struct Entry {
  int64_t ns = 0;
  int device = 0;
  SnapshotAction action = SnapshotAction::Alloc;
  uint64_t addr = 0;
  int64_t size = 0;
  List frames;
};

// The Python frames of each event's innermost enclosing op, as torch's
// snapshot frames ({filename, line, name}, innermost first), found with one
// sweep per thread over its ops in start order.
class FrameFinder {
 public:
  explicit FrameFinder(const trace::Trace& t) : t_(t) {
    if (t.stacks.empty()) return;
    stacks_ = stacks::effective_stacks(t);
    for (size_t i = 0; i < t.events.size(); ++i)
      if (t.events[i].kind == trace::EventKind::Op) ops_[t.events[i].thread].push_back(i);
    for (auto& [thread, v] : ops_)
      std::sort(v.begin(), v.end(), [&](size_t a, size_t b) {
        const trace::Event &x = t.events[a], &y = t.events[b];
        return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.end_ns > y.end_ns;
      });
  }

  // Events of one thread must be asked for in time order.
  List frames(const trace::Event& e) {
    auto it = ops_.find(e.thread);
    if (it == ops_.end()) return {};
    Sweep& s = sweeps_[e.thread];
    const std::vector<size_t>& ops = it->second;
    while (s.next < ops.size() && t_.events[ops[s.next]].start_ns <= e.start_ns) {
      while (!s.open.empty() && t_.events[s.open.back()].end_ns < t_.events[ops[s.next]].start_ns) s.open.pop_back();
      s.open.push_back(ops[s.next++]);
    }
    while (!s.open.empty() && t_.events[s.open.back()].end_ns < e.start_ns) s.open.pop_back();
    if (s.open.empty()) return {};
    const uint32_t stack = s.open.back() < stacks_.size() ? stacks_[s.open.back()] : 0;
    if (stack == 0 || stack > t_.stacks.size()) return {};
    List out;
    for (uint32_t f : t_.stacks[stack - 1].frames) {
      if (f >= t_.frames.size() || t_.frames[f].kind != trace::FrameKind::Python) continue;
      const trace::Frame& fr = t_.frames[f];
      out.emplace_back(Dict{{"filename", text(fr.file)}, {"line", int64_t(fr.line)}, {"name", text(fr.function)}});
    }
    return out;
  }

 private:
  struct Sweep {
    size_t next = 0;
    std::vector<size_t> open;  // ops open at the last time asked, outermost first
  };
  std::string text(uint32_t id) const { return id < t_.strings.size() ? t_.strings[id] : std::string(); }

  const trace::Trace& t_;
  std::vector<uint32_t> stacks_;
  std::unordered_map<uint32_t, std::vector<size_t>> ops_;
  std::unordered_map<uint32_t, Sweep> sweeps_;
};

const char* action_name(SnapshotAction a) {
  switch (a) {
    case SnapshotAction::Alloc:
      return "alloc";
    case SnapshotAction::FreeRequested:
      return "free_requested";
    case SnapshotAction::Free:
      return "free_completed";
    case SnapshotAction::SegmentAlloc:
      return "segment_alloc";
    case SnapshotAction::SegmentFree:
      return "segment_free";
    case SnapshotAction::Oom:
      return "oom";
  }
  return "";
}

Value trace_entry(const Entry& e, SnapshotAction a) {
  Dict d{{"action", action_name(a)}, {"addr", e.addr},     {"size", e.size},
         {"stream", int64_t(0)},     {"frames", e.frames}, {"time_us", e.ns / 1000}};
  if (a == SnapshotAction::Oom) d.emplace_back("device_free", int64_t(0));  // not known to the hooks
  return Value(std::move(d));
}

Value block(uint64_t addr, int64_t size, bool active, List frames) {
  return Value(Dict{{"address", addr},
                    {"size", size},
                    {"requested_size", active ? size : int64_t(0)},
                    {"state", active ? "active_allocated" : "inactive"},
                    {"frames", std::move(frames)}});
}

}  // namespace

struct SnapshotBuilder::Impl {
  std::map<int32_t, std::vector<Entry>> entries;  // by pid
};

SnapshotBuilder::SnapshotBuilder() : impl_(std::make_unique<Impl>()) {}
SnapshotBuilder::~SnapshotBuilder() = default;

void SnapshotBuilder::add(const trace::Trace& t) {
  // The events that go into a snapshot, by time, so that each thread's frames are found in order.
  std::vector<const trace::Event*> events;
  for (const trace::Event& e : t.events) {
    if (e.kind == trace::EventKind::Memory && e.arg >= 1 && e.arg <= t.memory.size()) {
      const trace::MemoryInfo& m = t.memory[e.arg - 1];
      if (m.device_type == trace::kDeviceCuda && m.bytes != 0) events.push_back(&e);
    } else if (e.kind == trace::EventKind::CudaApi && e.arg >= 1 && e.arg <= t.cuda.size() &&
               e.name < t.strings.size() && cuda::out_of_memory(t.strings[e.name], t.cuda[e.arg - 1].result)) {
      events.push_back(&e);
    }
  }
  if (events.empty()) return;
  std::stable_sort(events.begin(), events.end(),
                   [](const trace::Event* a, const trace::Event* b) { return a->start_ns < b->start_ns; });
  FrameFinder finder(t);
  std::unordered_map<uint32_t, int> last_device;  // thread -> the device of its last CUDA memory event
  for (const trace::Event* e : events) {
    Entry x;
    x.ns = e->start_ns;
    x.frames = finder.frames(*e);
    if (e->kind == trace::EventKind::Memory) {
      const trace::MemoryInfo& m = t.memory[e->arg - 1];
      x.device = std::max<int>(m.device_index, 0);
      x.addr = m.ptr;
      x.size = m.bytes > 0 ? m.bytes : -m.bytes;
      x.action = m.segment ? (m.bytes > 0 ? SnapshotAction::SegmentAlloc : SnapshotAction::SegmentFree)
                           : (m.bytes > 0 ? SnapshotAction::Alloc : SnapshotAction::Free);
      last_device[e->thread] = x.device;
    } else {
      // A failed call names no device: the thread's last one.
      const auto it = last_device.find(e->thread);
      x.device = it == last_device.end() ? 0 : it->second;
      x.action = SnapshotAction::Oom;
      x.size = int64_t(t.cuda[e->arg - 1].bytes);
    }
    impl_->entries[detail::pid_of(t, e->thread)].push_back(std::move(x));
  }
}

Snapshot SnapshotBuilder::finish() && {
  Snapshot out;
  out.processes = impl_->entries.size();
  std::vector<Entry>* chosen = nullptr;
  for (auto& [pid, v] : impl_->entries)
    if (!chosen || v.size() > chosen->size()) {
      chosen = &v;
      out.pid = pid;
    }
  std::vector<Entry> none;
  std::vector<Entry>& entries = chosen ? *chosen : none;
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.ns < b.ns; });

  // The trace per device, and what is live at the end.
  struct Live {
    int device;
    int64_t size;
    const List* frames;
  };
  std::map<uint64_t, Live> segments, blocks;  // by address
  std::vector<List> traces;
  for (const Entry& e : entries) {
    if (size_t(e.device) >= traces.size()) traces.resize(size_t(e.device) + 1);
    List& trace = traces[size_t(e.device)];
    switch (e.action) {
      case SnapshotAction::Alloc:
        blocks[e.addr] = Live{e.device, e.size, &e.frames};
        break;
      case SnapshotAction::FreeRequested:
        break;
      case SnapshotAction::Free:
        blocks.erase(e.addr);
        trace.push_back(trace_entry(e, SnapshotAction::FreeRequested));
        ++out.entries;
        break;
      case SnapshotAction::SegmentAlloc:
        segments[e.addr] = Live{e.device, e.size, &e.frames};
        break;
      case SnapshotAction::SegmentFree:
        segments.erase(e.addr);
        break;
      case SnapshotAction::Oom:
        ++out.ooms;
        break;
    }
    trace.push_back(trace_entry(e, e.action));
    ++out.entries;
  }
  List segment_list;
  for (const auto& [addr, seg] : segments) {
    List seg_blocks;
    uint64_t at = addr;
    const uint64_t end = addr + uint64_t(seg.size);
    int64_t allocated = 0;
    for (auto it = blocks.lower_bound(addr); it != blocks.end() && it->first < end; ++it) {
      if (it->first < at || it->first + uint64_t(it->second.size) > end || it->second.device != seg.device) continue;
      if (it->first > at) seg_blocks.push_back(block(at, int64_t(it->first - at), false, {}));
      seg_blocks.push_back(block(it->first, it->second.size, true, *it->second.frames));
      allocated += it->second.size;
      at = it->first + uint64_t(it->second.size);
      ++out.blocks;
    }
    if (at < end) seg_blocks.push_back(block(at, int64_t(end - at), false, {}));
    segment_list.push_back(Value(Dict{{"device", int64_t(seg.device)},
                                      {"address", addr},
                                      {"total_size", seg.size},
                                      {"allocated_size", allocated},
                                      {"active_size", allocated},
                                      {"requested_size", allocated},
                                      {"stream", int64_t(0)},
                                      {"segment_type", "large"},
                                      {"is_expandable", false},
                                      {"frames", *seg.frames},
                                      {"blocks", std::move(seg_blocks)}}));
    ++out.segments;
  }
  List device_traces;
  for (List& trace : traces) device_traces.emplace_back(std::move(trace));
  out.pickle =
      pickle::dumps(Value(Dict{{"segments", std::move(segment_list)}, {"device_traces", std::move(device_traces)}}));
  return out;
}

}  // namespace ptprof::memory
