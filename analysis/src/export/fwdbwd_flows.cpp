#include "export/fwdbwd_flows.hpp"

#include <algorithm>
#include <string_view>

namespace ptprof::exporting::detail {
namespace {

constexpr uint8_t kBackwardScope = 1;  // wire::OpScope::BackwardFunction
constexpr std::string_view kEvaluate = "autograd::engine::evaluate_function: ";

}  // namespace

void FwdBwdFlows::see(const trace::Trace& t, const trace::Event& e, uint64_t export_id, int64_t wall_ns) {
  if (e.kind != trace::EventKind::Op || (e.flags & trace::kAsync) || e.thread >= t.threads.size()) return;
  const trace::Thread& th = t.threads[e.thread];
  const int32_t pid = th.process < t.processes.size() ? t.processes[th.process].pid : 0;
  const std::string_view name = e.name < t.strings.size() ? std::string_view(t.strings[e.name]) : "";
  if (e.seq_nr < 0) {
    if (name.starts_with(kEvaluate))
      evaluates_[{pid, th.tid, std::string(name.substr(kEvaluate.size()))}].push_back(
          Evaluate{export_id, wall_ns, wall_ns + (e.end_ns - e.start_ns)});
    return;
  }
  const Key key{pid, e.seq_nr};
  if (e.fwd_thread_id != 0) {
    if (e.scope == kBackwardScope) {
      backward_.emplace_back(export_id, key);
      backward_runs_[{pid, th.tid, std::string(name)}].push_back(BackwardRun{wall_ns, e.seq_nr, e.fwd_thread_id});
    }
    return;
  }
  auto [it, inserted] = forward_.try_emplace(key, Forward{wall_ns, export_id, th.tid, false});
  if (inserted) return;
  Forward& f = it->second;
  if (f.tid != th.tid) f.ambiguous = true;
  if (wall_ns >= f.wall_ns) {  // Kineto's choice: the last to start
    f.wall_ns = wall_ns;
    f.export_id = export_id;
  }
}

void FwdBwdFlows::link() {
  // Each evaluate_function op runs the backward function of its name that
  // starts first within it, on its thread.
  for (auto& [key, runs] : backward_runs_) {
    auto evaluates = evaluates_.find(key);
    if (evaluates == evaluates_.end()) continue;
    std::sort(runs.begin(), runs.end(),
              [](const BackwardRun& a, const BackwardRun& b) { return a.start_ns < b.start_ns; });
    for (const Evaluate& ev : evaluates->second) {
      auto it = std::lower_bound(runs.begin(), runs.end(), ev.start_ns,
                                 [](const BackwardRun& r, int64_t start) { return r.start_ns < start; });
      if (it != runs.end() && it->start_ns <= ev.end_ns) inherited_[ev.export_id] = {it->seq_nr, it->fwd_thread_id};
    }
  }
  evaluates_.clear();
  backward_runs_.clear();
  for (const auto& [export_id, key] : backward_) {
    auto it = forward_.find(key);
    if (it == forward_.end() || it->second.ambiguous) continue;
    ++links_;
    ends_[it->second.export_id].push_back(FlowEnd{true, links_});
    ends_[export_id].push_back(FlowEnd{false, links_});
  }
}

const std::pair<int64_t, uint64_t>* FwdBwdFlows::inherited(uint64_t export_id) const {
  auto it = inherited_.find(export_id);
  return it == inherited_.end() ? nullptr : &it->second;
}

const std::vector<FlowEnd>& FwdBwdFlows::ends(uint64_t export_id) const {
  static const std::vector<FlowEnd> kNone;
  auto it = ends_.find(export_id);
  return it == ends_.end() ? kNone : it->second;
}

}  // namespace ptprof::exporting::detail
