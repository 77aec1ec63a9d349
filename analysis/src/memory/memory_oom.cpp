// Out-of-memory events: the CUDA allocations that failed (the hooks' CudaApi
// calls, ptprof/out_of_memory.hpp), where they were made and the memory of
// the process at that moment.
#include <algorithm>
#include <map>

#include "memory/memory_growth.hpp"
#include "ptprof/out_of_memory.hpp"
#include "stacks/stack_attribution.hpp"

namespace ptprof::memory::detail {

void add_out_of_memory(const trace::Trace& t, Summary& s) {
  auto text = [&](uint32_t id) -> std::string { return id < t.strings.size() ? t.strings[id] : std::string(); };
  std::vector<uint32_t> stacks;
  for (const trace::Event& e : t.events) {
    if (e.kind != trace::EventKind::CudaApi || e.arg < 1 || e.arg > t.cuda.size()) continue;
    const trace::CudaInfo& c = t.cuda[e.arg - 1];
    const std::string api = text(e.name);
    if (!cuda::out_of_memory(api, c.result)) continue;
    OutOfMemory o;
    o.pid = pid_of(t, e.thread);
    o.ns = e.start_ns;
    o.api = api;
    o.bytes = c.bytes;
    // The ops and ranges open on the thread around the call.
    const trace::Event* outer = nullptr;
    const trace::Event* inner = nullptr;
    for (const trace::Event& x : t.events) {
      if ((x.kind != trace::EventKind::Op && x.kind != trace::EventKind::Range) || x.thread != e.thread ||
          x.start_ns > e.start_ns || x.end_ns < e.end_ns)
        continue;
      if (!outer || x.start_ns < outer->start_ns) outer = &x;
      if (!inner || x.start_ns >= inner->start_ns) inner = &x;
    }
    if (outer) o.op = text(outer->name);
    if (inner) o.inner = text(inner->name);
    if (!t.stacks.empty()) {
      if (stacks.empty()) stacks = stacks::effective_stacks(t);
      o.stack = enclosing_stack(t, stacks, e);
    }
    s.out_of_memory.push_back(std::move(o));
  }
}

void fill_out_of_memory_state(Summary& s) {
  std::stable_sort(s.out_of_memory.begin(), s.out_of_memory.end(),
                   [](const OutOfMemory& a, const OutOfMemory& b) { return a.ns < b.ns; });
  for (OutOfMemory& o : s.out_of_memory) {
    // The last point of each device of the process at or before the failure (the timeline is by time).
    std::map<std::pair<int8_t, int8_t>, TimelinePoint> last;
    for (const TimelinePoint& p : s.timeline) {
      if (p.ns > o.ns) break;
      if (p.pid == o.pid) last[{p.device_type, p.device_index}] = p;
    }
    for (const auto& [key, p] : last) o.state.push_back(p);
  }
}

}  // namespace ptprof::memory::detail
