#include "report/report_memory.hpp"

#include <algorithm>
#include <set>
#include <tuple>

namespace ptprof::report::detail {

// c10::DeviceType: CPU 0, CUDA 1, MKLDNN 2, IDEEP 5, HIP 6, XPU 12, PrivateUse1 20.
bool is_cpu_memory(int8_t device_type) { return device_type == 0 || device_type == 2 || device_type == 5; }
bool is_device_memory(int8_t device_type) {
  return device_type == 1 || device_type == 6 || device_type == 12 || device_type == 20;
}

std::vector<uint8_t> frees_from_before(const trace::Trace& t) {
  std::vector<uint8_t> out(t.memory.size(), 0);
  std::vector<const trace::Event*> events;
  for (const auto& e : t.events)
    if (e.kind == trace::EventKind::Memory && e.arg >= 1 && e.arg <= t.memory.size()) events.push_back(&e);
  // Time order across threads (a block may be freed on another thread than
  // the one that allocated it); file order among equal times.
  std::stable_sort(events.begin(), events.end(),
                   [](const trace::Event* a, const trace::Event* b) { return a->start_ns < b->start_ns; });
  std::set<std::tuple<int32_t, int8_t, int8_t, uint64_t>> open;  // pid, device type, index, address
  for (const trace::Event* e : events) {
    const trace::MemoryInfo& m = t.memory[e->arg - 1];
    if (m.segment || m.bytes == 0) continue;
    const trace::Thread* th = e->thread < t.threads.size() ? &t.threads[e->thread] : nullptr;
    const int32_t pid = th && th->process < t.processes.size() ? t.processes[th->process].pid : 0;
    const auto key = std::make_tuple(pid, m.device_type, m.device_index, m.ptr);
    if (m.bytes > 0)
      open.insert(key);
    else if (open.erase(key) == 0)
      out[e->arg - 1] = 1;
  }
  return out;
}

void ThreadMemory::add(int64_t ts, const trace::MemoryInfo& m, uint32_t record) {
  MemorySum b;
  if (is_cpu_memory(m.device_type)) b.cpu = m.bytes;
  if (is_device_memory(m.device_type)) b.device = m.bytes;
  points_.push_back(Point{ts, b, record});
}

void ThreadMemory::seal() {
  std::stable_sort(points_.begin(), points_.end(), [](const Point& a, const Point& b) { return a.ts < b.ts; });
  ts_.resize(points_.size());
  prefix_.assign(points_.size() + 1, MemorySum{});
  for (size_t i = 0; i < points_.size(); ++i) {
    ts_[i] = points_[i].ts;
    prefix_[i + 1] = prefix_[i];
    prefix_[i + 1] += points_[i].bytes;
  }
  cover_.assign(points_.size() + 1, 0);
}

MemorySum ThreadMemory::in(int64_t start, int64_t end) {
  // bisect_left on start, bisect_right on end, as MemRecordsAcc.in_interval.
  const size_t lo = size_t(std::lower_bound(ts_.begin(), ts_.end(), start) - ts_.begin());
  const size_t hi = size_t(std::upper_bound(ts_.begin(), ts_.end(), end) - ts_.begin());
  if (lo >= hi) return {};
  ++cover_[lo];
  --cover_[hi];
  MemorySum s = prefix_[hi];
  s -= prefix_[lo];
  return s;
}

MemorySum ThreadMemory::outside(uint64_t* count, int64_t* first_ts) const {
  MemorySum s;
  uint64_t n = 0;
  int32_t depth = 0;
  for (size_t i = 0; i < points_.size(); ++i) {
    depth += cover_[i];
    if (depth > 0) continue;
    if (n == 0 && first_ts) *first_ts = points_[i].ts;
    s += points_[i].bytes;
    ++n;
  }
  if (count) *count = n;
  return s;
}

}  // namespace ptprof::report::detail
