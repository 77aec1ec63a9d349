// SummaryBuilder: peaks, live allocations, per-op counts and the timeline of
// the Memory events of each trace (see memory.hpp).
#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "memory/memory_growth.hpp"
#include "ptprof/analysis/memory.hpp"
#include "stacks/stack_attribution.hpp"

namespace ptprof::memory {

std::string device_name(int8_t type, int8_t index) {
  std::string name;
  switch (type) {
    case trace::kDeviceCpu:
      name = "CPU";
      break;
    case trace::kDeviceCuda:
      name = "CUDA";
      break;
    default:
      name = "device type " + std::to_string(int(type));
      break;
  }
  if (index >= 0 && type != trace::kDeviceCpu) name += ":" + std::to_string(int(index));
  return name;
}

namespace {

using DeviceKey = std::tuple<int32_t, int8_t, int8_t>;  // pid, type, index

}  // namespace

struct SummaryBuilder::Impl {
  Summary s;
  std::map<DeviceKey, Peak> peaks;
  // (op, shapes, inputs, device) -> group
  std::map<std::tuple<std::string, std::string, std::string, int8_t, int8_t>, LiveGroup> live;
  std::unordered_map<std::string, OpMemory> ops;
  std::unordered_map<std::string, OpMemory> segment_ops;
  std::map<detail::GrowthKey, Growth> growth;

  void add(const std::string& path, const trace::Trace& t);
};

namespace {

// Memory by category at each step's end and at the categories' peak.
void add_categories(Summary& s, const trace::Trace& t) {
  CategoryResult r = memory_categories(t);
  if (!r.unavailable.empty()) {
    if (s.category_timelines.empty()) s.categories_unavailable = r.unavailable;
    return;
  }
  s.categories_unavailable.clear();
  std::map<int32_t, std::vector<const trace::Event*>> steps;
  for (const trace::Event& e : t.events)
    if (trace::is_step(e)) steps[detail::pid_of(t, e.thread)].push_back(&e);
  for (CategoryTimeline& tl : r.timelines) {
    auto& pid_steps = steps[tl.pid];
    std::sort(pid_steps.begin(), pid_steps.end(),
              [](const trace::Event* a, const trace::Event* b) { return a->end_ns < b->end_ns; });
    for (const trace::Event* e : pid_steps)
      s.categories.push_back(
          {tl.pid, tl.device_type, tl.device_index, false, e->arg, e->end_ns, tl.at(e->end_ns / 1000)});
    size_t peak = 0;
    int64_t best = INT64_MIN;
    for (size_t i = 0; i < tl.bytes.size(); ++i) {
      int64_t total = 0;
      for (int64_t v : tl.bytes[i]) total += v;
      if (total > best) best = total, peak = i;
    }
    if (!tl.bytes.empty())
      s.categories.push_back(
          {tl.pid, tl.device_type, tl.device_index, true, 0, tl.times_us[peak] * 1000, tl.bytes[peak]});
    s.category_timelines.push_back(std::move(tl));
  }
}

}  // namespace

SummaryBuilder::SummaryBuilder() : impl_(std::make_unique<Impl>()) {}
SummaryBuilder::~SummaryBuilder() = default;

void SummaryBuilder::add(const std::string& path, const trace::Trace& t) { impl_->add(path, t); }

void SummaryBuilder::Impl::add(const std::string& path, const trace::Trace& t) {
  s.files.push_back(path);
  add_categories(s, t);
  auto text = [&](uint32_t id) -> std::string { return id < t.strings.size() ? t.strings[id] : std::string(); };
  // The op an event is charged to: the outermost op, else the innermost span.
  auto op_of = [&](const trace::MemoryInfo& m) -> std::pair<std::string, std::string> {
    if (m.top_op) return {text(m.top_op), text(m.top_shapes)};
    if (m.op) return {text(m.op), text(m.op_shapes)};
    return {"[outside any op]", ""};
  };

  std::vector<const trace::Event*> events;
  for (const auto& e : t.events)
    if (e.kind == trace::EventKind::Memory && e.arg >= 1 && e.arg <= t.memory.size()) events.push_back(&e);
  std::stable_sort(events.begin(), events.end(),
                   [](const trace::Event* a, const trace::Event* b) { return a->start_ns < b->start_ns; });
  s.events += events.size();

  // The events at the peaks this trace sets, whose stacks are looked up last.
  std::map<DeviceKey, const trace::Event*> allocated_at, reserved_at;
  // The blocks allocated in this trace, and (pid, device, ptr) -> the one
  // still open at an address.
  std::vector<detail::WindowBlock> blocks;
  std::map<std::tuple<int32_t, int8_t, int8_t, uint64_t>, size_t> open;
  for (const trace::Event* e : events) {
    const trace::MemoryInfo& m = t.memory[e->arg - 1];
    const trace::Thread* th = e->thread < t.threads.size() ? &t.threads[e->thread] : nullptr;
    const int32_t pid = th && th->process < t.processes.size() ? t.processes[th->process].pid : 0;
    auto [op, shapes] = op_of(m);

    auto [it, fresh] = peaks.try_emplace(DeviceKey{pid, m.device_type, m.device_index});
    Peak& p = it->second;
    if (fresh) {
      p.pid = pid;
      p.device_type = m.device_type;
      p.device_index = m.device_index;
    }
    // A segment's total_allocated repeats torch's last: the allocated peak is torch's events'.
    if (!m.segment && (!p.allocated_seen || m.total_allocated > p.allocated)) {
      p.allocated_seen = true;
      p.allocated = m.total_allocated;
      p.allocated_ns = e->start_ns;
      p.allocated_op = op;
      p.allocated_inner = text(m.op);
      p.allocated_file = path;
      p.allocated_stack.clear();
      allocated_at[it->first] = e;
    }
    if (m.total_reserved > p.reserved) {
      p.reserved = m.total_reserved;
      p.reserved_ns = e->start_ns;
      p.reserved_op = op;
      p.reserved_stack.clear();
      reserved_at[it->first] = e;
    }
    s.timeline.push_back(
        TimelinePoint{e->start_ns, pid, m.device_type, m.device_index, m.total_allocated, m.total_reserved});

    if (m.segment) {
      ++s.segment_events;
      OpMemory& o = segment_ops[op];
      o.op = op;
      if (m.bytes > 0) {
        ++o.allocs;
        o.alloc_bytes += m.bytes;
      } else {
        ++o.frees;
        o.freed_bytes -= m.bytes;
      }
      continue;  // reserved memory: neither a leak candidate nor an allocation
    }
    const auto key = std::make_tuple(pid, m.device_type, m.device_index, m.ptr);
    if (m.bytes > 0) {
      OpMemory& o = ops[op];
      o.op = op;
      ++o.allocs;
      o.alloc_bytes += m.bytes;
      open[key] = blocks.size();
      blocks.push_back(detail::WindowBlock{pid, m.device_type, m.device_index, e->start_ns,
                                           detail::WindowBlock::kNotFreed, m.bytes, op, shapes,
                                           m.top_op ? text(m.top_inputs) : std::string(), e});
    } else if (m.bytes < 0) {
      OpMemory& o = ops[op];
      o.op = op;
      ++o.frees;
      o.freed_bytes -= m.bytes;
      const auto at = open.find(key);
      if (at != open.end()) {
        blocks[at->second].free_ns = e->start_ns;
        open.erase(at);
      } else {
        if (m.alloc_ns == 0) {
          ++s.unmatched_frees;
          s.unmatched_freed_bytes -= m.bytes;
        } else {
          ++s.earlier_frees;
          s.earlier_freed_bytes -= m.bytes;
        }
      }
    }
  }
  if (!t.stacks.empty() && (!allocated_at.empty() || !reserved_at.empty())) {
    const std::vector<uint32_t> stacks = stacks::effective_stacks(t);
    for (const auto& [key, e] : allocated_at) peaks[key].allocated_stack = detail::enclosing_stack(t, stacks, *e);
    for (const auto& [key, e] : reserved_at) peaks[key].reserved_stack = detail::enclosing_stack(t, stacks, *e);
  }
  detail::add_step_memory(t, blocks, s, growth);
  detail::add_out_of_memory(t, s);
  for (const auto& [key, at] : open) {
    const detail::WindowBlock& b = blocks[at];
    const int8_t type = std::get<1>(key), index = std::get<2>(key);
    LiveGroup& g = live[std::make_tuple(b.op, b.shapes, b.inputs, type, index)];
    if (g.count == 0) {
      g.op = b.op;
      g.shapes = b.shapes;
      g.inputs = b.inputs;
      g.device_type = type;
      g.device_index = index;
      g.block_bytes = b.bytes;
    } else if (g.block_bytes != b.bytes) {
      g.block_bytes = 0;
    }
    ++g.count;
    g.bytes += b.bytes;
  }
}

Summary SummaryBuilder::finish() && {
  Impl& m = *impl_;
  Summary s = std::move(m.s);
  for (auto& [k, p] : m.peaks) s.peaks.push_back(std::move(p));
  for (auto& [k, g] : m.live) s.live.push_back(std::move(g));
  std::stable_sort(s.live.begin(), s.live.end(), [](const LiveGroup& a, const LiveGroup& b) {
    return std::tie(b.bytes, b.count) < std::tie(a.bytes, a.count);
  });
  const auto by_bytes = [](const OpMemory& a, const OpMemory& b) {
    return std::tie(b.alloc_bytes, b.allocs, a.op) < std::tie(a.alloc_bytes, a.allocs, b.op);
  };
  for (auto& [k, o] : m.ops) s.ops.push_back(std::move(o));
  std::sort(s.ops.begin(), s.ops.end(), by_bytes);
  for (auto& [k, o] : m.segment_ops) s.segment_ops.push_back(std::move(o));
  std::sort(s.segment_ops.begin(), s.segment_ops.end(), by_bytes);
  for (auto& [k, g] : m.growth) s.growth.push_back(std::move(g));
  std::stable_sort(s.growth.begin(), s.growth.end(), [](const Growth& a, const Growth& b) {
    return std::tie(b.bytes, b.count) < std::tie(a.bytes, a.count);
  });
  std::stable_sort(s.step_live.begin(), s.step_live.end(), [](const StepLive& a, const StepLive& b) {
    return std::tie(a.pid, a.device_type, a.device_index, a.end_ns) <
           std::tie(b.pid, b.device_type, b.device_index, b.end_ns);
  });
  std::stable_sort(s.timeline.begin(), s.timeline.end(),
                   [](const TimelinePoint& a, const TimelinePoint& b) { return a.ns < b.ns; });
  detail::fill_out_of_memory_state(s);
  return s;
}

}  // namespace ptprof::memory
