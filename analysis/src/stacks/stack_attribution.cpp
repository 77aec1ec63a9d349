#include "stacks/stack_attribution.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string_view>
#include <unordered_map>

#include "model/event_tree.hpp"

namespace ptprof::stacks {
namespace {

// torch's _filter_stack_entry: frames of the autograd machinery itself.
bool filtered(std::string_view entry) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kFiltered = {{
      {"autograd/__init__", "_make_grads"},
      {"autograd/__init__", "backward"},
      {"torch/tensor", "backward"},
      {"_internal/common_utils", "prof_callable"},
      {"_internal/common_utils", "prof_func_call"},
      {"_internal/common_utils", "prof_meth_call"},
  }};
  return std::any_of(kFiltered.begin(), kFiltered.end(), [&](const auto& f) {
    return entry.find(f.first) != std::string_view::npos && entry.find(f.second) != std::string_view::npos;
  });
}

constexpr uint8_t kBackwardFunction = 1;  // wire::OpScope::BackwardFunction

}  // namespace

std::string frame_text(const trace::Trace& t, const trace::Frame& f) {
  auto str = [&](uint32_t id) -> std::string_view {
    return id < t.strings.size() ? std::string_view(t.strings[id]) : std::string_view();
  };
  if (f.kind == trace::FrameKind::Python)
    return std::string(str(f.file)) + "(" + std::to_string(f.line) + "): " + std::string(str(f.function));
  char offset[32];
  std::snprintf(offset, sizeof offset, "+0x%llx", static_cast<unsigned long long>(f.offset));
  if (f.function) return std::string(str(f.function));
  return std::string(str(f.file)) + offset;
}

std::vector<std::string> stack_entries(const trace::Trace& t, uint32_t stack) {
  std::vector<std::string> out;
  if (stack == 0 || stack > t.stacks.size()) return out;
  for (uint32_t f : t.stacks[stack - 1].frames) {
    if (f >= t.frames.size() || t.frames[f].kind != trace::FrameKind::Python) continue;
    std::string e = frame_text(t, t.frames[f]);
    if (!filtered(e)) out.push_back(std::move(e));
  }
  return out;
}

std::vector<uint32_t> effective_stacks(const trace::Trace& t) {
  const size_t n = t.events.size();
  std::vector<uint32_t> eff(n, 0);
  if (t.stacks.empty()) return eff;
  // Ops by thread, in torch's order (start, then longer first).
  std::vector<uint32_t> ops;
  for (uint32_t i = 0; i < n; ++i)
    if (t.events[i].kind == trace::EventKind::Op && !(t.events[i].flags & trace::kAsync)) ops.push_back(i);
  std::sort(ops.begin(), ops.end(), [&](uint32_t a, uint32_t b) {
    const trace::Event &x = t.events[a], &y = t.events[b];
    if (x.thread != y.thread) return x.thread < y.thread;
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    return x.end_ns > y.end_ns;
  });
  std::vector<int64_t> backward(n, -1);           // the innermost enclosing backward function
  std::unordered_map<int64_t, uint32_t> forward;  // seq_nr -> stack of its first forward op
  model::NestingStack open;                       // torch's cpu_parent, which _set_backward_stacktraces walks
  uint32_t thread = UINT32_MAX;
  for (uint32_t i : ops) {
    const trace::Event& e = t.events[i];
    if (e.thread != thread) {
      open.clear();
      thread = e.thread;
    }
    const int64_t parent = open.settle(e.start_ns, e.end_ns);
    eff[i] = e.stack ? e.stack : parent >= 0 ? eff[size_t(parent)] : 0;
    // torch 2.x's backward functions leave their ops the stacks they have.
    const bool takes_forward = e.scope == kBackwardFunction && !(e.flags & trace::kCallerStacks);
    backward[i] = takes_forward ? int64_t(i) : parent >= 0 ? backward[size_t(parent)] : -1;
    if (backward[i] < 0 && e.seq_nr >= 0) forward.try_emplace(e.seq_nr, eff[i]);
    open.open(i, e.start_ns, e.end_ns);
  }
  for (uint32_t i : ops) {
    if (backward[i] < 0) continue;
    auto it = forward.find(t.events[size_t(backward[i])].seq_nr);
    eff[i] = it == forward.end() ? 0 : it->second;
  }
  return eff;
}

}  // namespace ptprof::stacks
