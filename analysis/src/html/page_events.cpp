// HtmlEvents: what the page's timeline and flame graphs keep of each trace
// (page_events.hpp).
#include "html/page_events.hpp"

#include <algorithm>

#include "ptprof/cuda_status.hpp"
#include "stacks/stack_attribution.hpp"
#include "text/json_string.hpp"

namespace ptprof::html {

using trace::EventKind;

namespace {

// The kinds the timeline draws: memory events are the memory plot's, CUPTI's
// own records (API copies, overhead) would double what the hooks recorded.
bool drawn(EventKind k) {
  switch (k) {
    case EventKind::Op:
    case EventKind::Range:
    case EventKind::Mark:
    case EventKind::Step:
    case EventKind::CudaApi:
    case EventKind::Kernel:
    case EventKind::Memcpy:
    case EventKind::Memset:
    case EventKind::GpuSync:
      return true;
    default:
      return false;
  }
}

bool gpu_activity(EventKind k) { return k == EventKind::Kernel || k == EventKind::Memcpy || k == EventKind::Memset; }

}  // namespace

HtmlEvents::Impl::Impl()
    : cpu(stacks::flamegraph::Metric::SelfCpu),
      cuda(stacks::flamegraph::Metric::SelfCuda),
      bytes(stacks::flamegraph::Metric::AllocBytes) {}

uint32_t HtmlEvents::Impl::intern(std::string_view s) {
  if (s.empty()) return 0;
  auto [it, added] = ids.try_emplace(std::string(s), uint32_t(strings.size()));
  if (added) strings.emplace_back(s);
  return it->second;
}

void HtmlEvents::Impl::add(const trace::Trace& t) {
  cpu.add(t);
  cuda.add(t);
  bytes.add(t);
  for (const trace::Process& p : t.processes)
    if (p.rank >= 0) ranks[p.pid] = p.rank;
  std::vector<uint32_t> name_ids(t.strings.size(), UINT32_MAX);
  auto page_string = [&](uint32_t id) -> uint32_t {
    if (id == 0 || id >= t.strings.size()) return 0;
    if (name_ids[id] == UINT32_MAX) name_ids[id] = intern(t.strings[id]);
    return name_ids[id];
  };
  std::unordered_map<uint32_t, uint32_t> stack_ids;  // the trace's stack -> page string
  auto page_stack = [&](uint32_t stack) -> uint32_t {
    if (stack == 0 || stack > t.stacks.size()) return 0;
    auto [it, added] = stack_ids.try_emplace(stack, 0);
    if (added) {
      std::vector<std::string> entries = stacks::stack_entries(t, stack);
      if (entries.empty()) entries = native.names(t, stack);  // native frames only
      std::string text;
      for (const std::string& e : entries) text += (text.empty() ? "" : "\n") + e;
      it->second = intern(text);
    }
    return it->second;
  };
  std::vector<detail::PageTrack*> by_thread(t.threads.size(), nullptr);
  for (size_t i = 0; i < t.threads.size(); ++i) {
    const trace::Thread& th = t.threads[i];
    const int32_t pid = th.process < t.processes.size() ? t.processes[th.process].pid : 0;
    detail::PageTrack& track = tracks[{pid, th.device, th.tid}];
    track.pid = pid;
    track.tid = th.tid;
    track.device = th.device;
    if (track.thread_name.empty()) track.thread_name = th.name;
    by_thread[i] = &track;
  }
  for (const trace::Event& e : t.events) {
    ++events;
    if (!drawn(e.kind) || e.thread >= by_thread.size()) continue;
    if (wire::is_cuda_device_mark(t, e)) continue;  // the GPUs' properties, for the exports: not the program's
    detail::PageTrack& track = *by_thread[e.thread];
    detail::PageEvent pe{
        e.start_ns, std::max(e.start_ns, e.end_ns), page_string(e.name), page_string(e.shapes), page_stack(e.stack), 0};
    if (e.kind == EventKind::Op) pe.link = e.arg;
    if (gpu_activity(e.kind) && e.arg && e.arg <= t.cuda.size()) pe.link = t.cuda[e.arg - 1].external_id;
    if (trace::is_step(e)) steps.push_back({track.pid, e.arg, e.start_ns, pe.end_ns});
    track.events.push_back(pe);
  }
}

HtmlEvents::HtmlEvents() : impl_(std::make_unique<Impl>()) {}
HtmlEvents::~HtmlEvents() = default;
void HtmlEvents::add(const trace::Trace& t) { impl_->add(t); }

namespace detail {

void append_script_json_string(std::string& out, std::string_view s) {
  const size_t from = out.size();
  text::append_json_string(out, s);
  // "</script>" (or "<!--") inside the string would end the element early.
  for (size_t i = from; i < out.size(); ++i)
    if (out[i] == '<') out.replace(i, 1, "\\u003c");
}

std::string process_label(const std::map<int32_t, int32_t>& ranks, int32_t pid) {
  auto it = ranks.find(pid);
  return it == ranks.end() ? "pid " + std::to_string(pid) : "rank " + std::to_string(it->second);
}

}  // namespace detail
}  // namespace ptprof::html
