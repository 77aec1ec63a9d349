// Live memory at each step's end and growth step over step (memory_growth.hpp).
// Measured at step ends, so the teardown after the last step (the
// interpreter freeing everything at exit) never hides a leak.
#include "memory/memory_growth.hpp"

#include <algorithm>
#include <set>

#include "stacks/stack_attribution.hpp"

namespace ptprof::memory::detail {

namespace {

struct GrowthStep {
  uint64_t number;
  int64_t start_ns, end_ns;
};

// The steps of each process in the trace, by start time.
std::map<int32_t, std::vector<GrowthStep>> steps_by_pid(const trace::Trace& t) {
  std::map<int32_t, std::vector<GrowthStep>> out;
  for (const trace::Event& e : t.events)
    if (trace::is_step(e)) out[pid_of(t, e.thread)].push_back(GrowthStep{e.arg, e.start_ns, e.end_ns});
  for (auto& [pid, v] : out)
    std::sort(v.begin(), v.end(), [](const GrowthStep& a, const GrowthStep& b) { return a.start_ns < b.start_ns; });
  return out;
}

// Live bytes and blocks over time of one process and device: a sorted list
// of changes and their running sums, queried at any time.
class LiveCurve {
 public:
  void add(const WindowBlock& b) {
    changes_.push_back({b.alloc_ns, b.bytes, 1});
    if (b.free_ns != WindowBlock::kNotFreed) changes_.push_back({b.free_ns, -b.bytes, -1});
  }
  void finish() {
    std::stable_sort(changes_.begin(), changes_.end(), [](const Change& a, const Change& b) { return a.ns < b.ns; });
    int64_t bytes = 0, blocks = 0;
    for (Change& c : changes_) {
      bytes += c.bytes;
      blocks += c.blocks;
      c.bytes = bytes;
      c.blocks = blocks;
    }
  }
  // (bytes, blocks) live just after every change at or before `ns`.
  std::pair<int64_t, int64_t> at(int64_t ns) const {
    auto it =
        std::upper_bound(changes_.begin(), changes_.end(), ns, [](int64_t v, const Change& c) { return v < c.ns; });
    if (it == changes_.begin()) return {0, 0};
    --it;
    return {it->bytes, it->blocks};
  }

 private:
  struct Change {
    int64_t ns, bytes, blocks;
  };
  std::vector<Change> changes_;
};

// The step whose span holds `ns`, or null (before, between or after steps).
const GrowthStep* growth_step_at(const std::vector<GrowthStep>& steps, int64_t ns) {
  auto it =
      std::upper_bound(steps.begin(), steps.end(), ns, [](int64_t v, const GrowthStep& s) { return v < s.start_ns; });
  if (it == steps.begin()) return nullptr;
  --it;
  return ns <= it->end_ns ? &*it : nullptr;
}

}  // namespace

int32_t pid_of(const trace::Trace& t, uint32_t thread) {
  const trace::Thread* th = thread < t.threads.size() ? &t.threads[thread] : nullptr;
  return th && th->process < t.processes.size() ? t.processes[th->process].pid : 0;
}

std::vector<std::string> enclosing_stack(const trace::Trace& t, const std::vector<uint32_t>& stacks,
                                         const trace::Event& e) {
  const trace::Event* inner = nullptr;
  size_t at = 0;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const trace::Event& o = t.events[i];
    if (o.kind != trace::EventKind::Op || o.thread != e.thread || o.start_ns > e.start_ns || o.end_ns < e.start_ns)
      continue;
    if (!inner || o.start_ns >= inner->start_ns) {
      inner = &o;
      at = i;
    }
  }
  if (!inner || at >= stacks.size() || !stacks[at]) return {};
  return stacks::stack_entries(t, stacks[at]);
}

void add_step_memory(const trace::Trace& t, const std::vector<WindowBlock>& blocks, Summary& s,
                     std::map<GrowthKey, Growth>& growth) {
  const auto steps = steps_by_pid(t);
  for (const auto& [pid, v] : steps) s.steps += v.size();
  if (steps.empty() || blocks.empty()) return;

  using DeviceKey = std::tuple<int32_t, int8_t, int8_t>;
  std::map<DeviceKey, LiveCurve> curves;
  for (const WindowBlock& b : blocks)
    if (steps.count(b.pid)) curves[DeviceKey{b.pid, b.device_type, b.device_index}].add(b);
  for (auto& [key, curve] : curves) {
    curve.finish();
    for (const GrowthStep& st : steps.at(std::get<0>(key))) {
      const auto [live, count] = curve.at(st.end_ns);
      const int64_t before = curve.at(st.start_ns - 1).first;
      s.step_live.push_back(StepLive{std::get<0>(key), std::get<1>(key), std::get<2>(key), st.number, st.end_ns, live,
                                     uint64_t(count), live - before});
    }
  }

  // Blocks allocated in a step and live at the last step's end: per group,
  // the steps they come from. A group from one step only (a cache filled
  // once, an optimizer's state) is no growth.
  struct Found {
    std::set<uint64_t> steps;
    uint64_t count = 0;
    int64_t bytes = 0;
    uint64_t first_step = 0, last_step = 0;
    const WindowBlock* first = nullptr;
  };
  std::map<GrowthKey, Found> found;
  for (const WindowBlock& b : blocks) {
    auto it = steps.find(b.pid);
    if (it == steps.end()) continue;
    const GrowthStep& last = it->second.back();
    const GrowthStep* in = growth_step_at(it->second, b.alloc_ns);
    if (!in || b.free_ns <= last.end_ns) continue;
    Found& f = found[GrowthKey{b.op, b.shapes, b.inputs, b.device_type, b.device_index}];
    if (!f.first || b.alloc_ns < f.first->alloc_ns) {
      f.first = &b;
      f.first_step = in->number;
    }
    f.steps.insert(in->number);
    ++f.count;
    f.bytes += b.bytes;
    f.last_step = last.number;
  }
  std::vector<uint32_t> stacks;
  for (auto& [key, f] : found) {
    if (f.steps.size() < 2) continue;
    if (stacks.empty() && !t.stacks.empty()) stacks = stacks::effective_stacks(t);
    Growth& g = growth[key];
    if (g.steps == 0) {
      std::tie(g.op, g.shapes, g.inputs, g.device_type, g.device_index) = key;
      g.first_step = f.first_step;
      if (!stacks.empty()) g.stack = enclosing_stack(t, stacks, *f.first->event);
    }
    g.steps += f.steps.size();
    g.count += f.count;
    g.bytes += f.bytes;
    g.last_step = f.last_step;
  }
}

}  // namespace ptprof::memory::detail
