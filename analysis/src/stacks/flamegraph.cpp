#include "ptprof/analysis/flamegraph.hpp"

#include <algorithm>
#include <cstdio>
#include <unordered_map>
#include <vector>

#include "model/event_tree.hpp"
#include "stacks/native_frames.hpp"
#include "stacks/stack_attribution.hpp"

namespace ptprof::stacks::flamegraph {
namespace {

// Folded frames may not hold the separator; the count follows the last space.
std::string clean(std::string s) {
  std::replace(s.begin(), s.end(), ';', ':');
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

std::optional<Metric> parse_metric(std::string_view name) {
  if (name == "self_cpu") return Metric::SelfCpu;
  if (name == "self_cuda") return Metric::SelfCuda;
  if (name == "alloc_bytes") return Metric::AllocBytes;
  return std::nullopt;
}

struct Builder::Impl {
  Metric metric;
  std::map<std::string, int64_t> folded;
  stacks::NativeFrames native_frames;
  uint64_t with_stack = 0;

  std::string stack_text(const trace::Trace& t, uint32_t stack, const std::string& leaf) {
    // Python frames innermost first, less none: the folded stack shows them all.
    std::vector<std::string> python;
    if (stack && stack <= t.stacks.size())
      for (uint32_t f : t.stacks[stack - 1].frames)
        if (f < t.frames.size() && t.frames[f].kind == trace::FrameKind::Python)
          python.push_back(stacks::frame_text(t, t.frames[f]));
    const std::vector<std::string> native = native_frames.names(t, stack);
    std::string out;
    for (auto it = python.rbegin(); it != python.rend(); ++it) out += clean(*it) + ";";
    for (auto it = native.rbegin(); it != native.rend(); ++it) out += clean(*it) + ";";
    return out + clean(leaf);
  }

  void add(const trace::Trace& t) {
    const size_t n = t.events.size();
    const std::vector<uint32_t> stacks = stacks::effective_stacks(t);
    // Self values: each op's own, less its children's (ops nest by time per thread).
    std::vector<int64_t> value(n, 0);
    std::unordered_map<uint64_t, int64_t> device_by_op;
    if (metric == Metric::SelfCuda) {
      for (const trace::Event& e : t.events) {
        const bool device = e.kind == trace::EventKind::Kernel || e.kind == trace::EventKind::Memcpy ||
                            e.kind == trace::EventKind::Memset;
        if (device && e.arg && e.arg <= t.cuda.size() && t.cuda[e.arg - 1].external_id)
          device_by_op[t.cuda[e.arg - 1].external_id] += std::max<int64_t>(0, e.end_ns - e.start_ns);
      }
    }
    std::vector<uint32_t> order;
    for (uint32_t i = 0; i < n; ++i) {
      const trace::Event& e = t.events[i];
      if (e.kind == trace::EventKind::Op || (metric == Metric::AllocBytes && e.kind == trace::EventKind::Memory))
        order.push_back(i);
    }
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      const trace::Event &x = t.events[a], &y = t.events[b];
      if (x.thread != y.thread) return x.thread < y.thread;
      if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
      if (x.kind != y.kind) return x.kind == trace::EventKind::Op;  // an op holds a memory event at its start
      return x.end_ns > y.end_ns;
    });
    model::NestingStack open;
    uint32_t thread = UINT32_MAX;
    for (uint32_t i : order) {
      const trace::Event& e = t.events[i];
      if (e.thread != thread) {
        open.clear();
        thread = e.thread;
      }
      // A memory event is an instant: the op open at its time, its last moment included, made it.
      const bool memory = e.kind == trace::EventKind::Memory;
      const int64_t parent = memory ? open.instant(e.start_ns) : open.settle(e.start_ns, e.end_ns);
      if (memory) {
        if (parent >= 0 && e.arg && e.arg <= t.memory.size() && t.memory[e.arg - 1].bytes > 0)
          value[size_t(parent)] += t.memory[e.arg - 1].bytes;
        continue;
      }
      if (metric == Metric::SelfCpu) {
        const int64_t d = std::max<int64_t>(0, e.end_ns - e.start_ns);
        value[i] += d;
        if (parent >= 0) value[size_t(parent)] -= d;
      } else if (metric == Metric::SelfCuda && e.arg) {
        if (auto it = device_by_op.find(e.arg); it != device_by_op.end()) value[i] = it->second;
      }
      open.open(i, e.start_ns, e.end_ns);
    }
    for (uint32_t i : order) {
      const trace::Event& e = t.events[i];
      if (e.kind != trace::EventKind::Op || value[i] <= 0) continue;
      if (stacks[i]) ++with_stack;
      const std::string name = e.name < t.strings.size() ? t.strings[e.name] : std::string();
      folded[stack_text(t, stacks[i], name)] += value[i];
    }
  }
};

Builder::Builder(Metric metric) : impl_(std::make_unique<Impl>()) { impl_->metric = metric; }
Builder::~Builder() = default;
void Builder::add(const trace::Trace& t) { impl_->add(t); }
uint64_t Builder::ops_with_stack() const { return impl_->with_stack; }

std::string Builder::finish() && {
  std::string out;
  for (const auto& [stack, v] : impl_->folded) out += stack + " " + std::to_string(v) + "\n";
  return out;
}

}  // namespace ptprof::stacks::flamegraph
