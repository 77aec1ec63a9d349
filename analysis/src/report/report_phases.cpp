// Steps split into phases (report_phases.hpp). Each phase's events on the
// relevant threads become a union of intervals inside the step; the phases
// then claim the step's time in priority order, so overlaps count once.
#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>

#include "ptprof/analysis/report_phases.hpp"
#include "ptprof/record.hpp"
#include "ptprof/saturating.hpp"
#include "report/intervals.hpp"
#include "report/report_stream.hpp"

namespace ptprof::report {

namespace {

using detail::clipped;
using detail::Interval;
using detail::Intervals;
using detail::merged;

constexpr std::string_view kBackwardPrefix = "autograd::engine::evaluate_function: ";
constexpr std::string_view kOptimizerStep = "Optimizer.step#";
constexpr std::string_view kOptimizerZeroGrad = "Optimizer.zero_grad#";
constexpr std::string_view kDataLoaderNext[] = {
    "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
    "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
};
// Claim order: a compile runs inside the compiled module's call (or a
// backward) and records the ops it traces; a DataLoader's or an optimizer's
// own ops, and backward ops run on the step's thread, lie inside top-level
// operators, which would otherwise make them forward.
constexpr Phase kPriority[] = {Phase::Compile, Phase::DataLoading, Phase::Optimizer, Phase::Backward, Phase::Forward};

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool is_backward(const trace::Event& e, std::string_view name) {
  return e.scope == uint8_t(wire::OpScope::BackwardFunction) || starts_with(name, kBackwardPrefix);
}

bool is_optimizer(std::string_view name) {
  return starts_with(name, kOptimizerStep) || starts_with(name, kOptimizerZeroGrad);
}

bool is_data_loading(std::string_view name) {
  return std::find(std::begin(kDataLoaderNext), std::end(kDataLoaderNext), name) != std::end(kDataLoaderNext);
}

bool is_timed_phase(const trace::Event& e) {
  return (e.kind == trace::EventKind::Op || e.kind == trace::EventKind::Range) && !(e.flags & trace::kAsync);
}

}  // namespace

uint8_t detail::phase_marks(const trace::Event& e, std::string_view name) {
  uint8_t m = kMarkForward;
  if (is_optimizer(name))
    m |= kMarkOptimizer;
  else if (is_data_loading(name))
    m |= kMarkDataLoading;
  if (is_backward(e, name)) m |= kMarkBackward;
  return m;
}

std::string_view phase_title(Phase p) {
  switch (p) {
    case Phase::Forward:
      return "Forward";
    case Phase::Backward:
      return "Backward";
    case Phase::Optimizer:
      return "Optimizer";
    case Phase::DataLoading:
      return "Data loading";
    case Phase::Compile:
      return "Compile";
    case Phase::Other:
      return "Other";
  }
  return "";
}

std::string_view phase_json_key(Phase p) {
  switch (p) {
    case Phase::Forward:
      return "forward";
    case Phase::Backward:
      return "backward";
    case Phase::Optimizer:
      return "optimizer";
    case Phase::DataLoading:
      return "data_loading";
    case Phase::Compile:
      return "compile";
    case Phase::Other:
      return "other";
  }
  return "";
}

std::vector<StepPhases> step_phases(const trace::Trace& t) {
  // What each name is, found once rather than for each of its events.
  constexpr uint8_t kBackwardName = 1, kOptimizerName = 2, kDataLoadingName = 4;
  std::vector<uint8_t> name_kind(t.strings.size());
  for (size_t i = 0; i < t.strings.size(); ++i) {
    const std::string_view n = t.strings[i];
    name_kind[i] =
        uint8_t((starts_with(n, kBackwardPrefix) ? kBackwardName : 0) | (is_optimizer(n)      ? kOptimizerName
                                                                         : is_data_loading(n) ? kDataLoadingName
                                                                                              : 0));
  }
  // Per thread: its events (indices); per process: its backward time.
  std::vector<std::vector<uint32_t>> by_thread(t.threads.size());
  std::vector<Intervals> backward(t.processes.size());
  for (uint32_t i = 0; i < t.events.size(); ++i) {
    const trace::Event& e = t.events[i];
    // Hand-built traces are not validated by a reader: skip what cannot be placed.
    if (e.thread >= t.threads.size() || e.name >= t.strings.size()) continue;
    by_thread[e.thread].push_back(i);
    const uint32_t process = t.threads[e.thread].process;
    if (process < backward.size() && is_timed_phase(e) &&
        (e.scope == uint8_t(wire::OpScope::BackwardFunction) || (name_kind[e.name] & kBackwardName)))
      backward[process].emplace_back(e.start_ns, e.end_ns);
  }
  for (Intervals& b : backward) b = merged(std::move(b));
  // Compile time: the union of the process's compile scopes, every thread's.
  const std::vector<detail::ProcessCompile> compile = detail::compile_spans(t);

  std::vector<StepPhases> out;
  for (size_t th = 0; th < t.threads.size(); ++th) {
    const trace::Thread& thread = t.threads[th];
    const bool known_process = thread.process < t.processes.size();
    Intervals steps;
    std::vector<uint64_t> numbers;
    for (uint32_t i : by_thread[th]) {
      const trace::Event& e = t.events[i];
      if (!trace::is_step(e)) continue;
      steps.emplace_back(e.start_ns, std::max(e.start_ns, e.end_ns));
      numbers.push_back(e.arg);
    }
    if (steps.empty()) continue;
    Intervals ops, optimizer, data_loading;
    for (uint32_t i : by_thread[th]) {
      const trace::Event& e = t.events[i];
      if (!is_timed_phase(e)) continue;
      ops.emplace_back(e.start_ns, e.end_ns);
      if (name_kind[e.name] & kOptimizerName)
        optimizer.emplace_back(e.start_ns, e.end_ns);
      else if (name_kind[e.name] & kDataLoadingName)
        data_loading.emplace_back(e.start_ns, e.end_ns);
    }
    std::sort(ops.begin(), ops.end());  // by start: each step reads only its own
    optimizer = merged(std::move(optimizer));
    data_loading = merged(std::move(data_loading));

    for (size_t s = 0; s < steps.size(); ++s) {
      const auto [lo, hi] = steps[s];
      // Forward: the operators and ranges that lie inside the step (the
      // top-level ones and, within them, what they contain).
      Intervals forward;
      for (auto it = std::lower_bound(ops.begin(), ops.end(), Interval{lo, INT64_MIN});
           it != ops.end() && it->first < hi; ++it)
        if (it->second <= hi) forward.push_back(*it);
      std::array<Intervals, kPhaseCount> parts;
      parts[size_t(Phase::Forward)] = merged(std::move(forward));
      parts[size_t(Phase::Optimizer)] = clipped(optimizer, lo, hi);
      parts[size_t(Phase::DataLoading)] = clipped(data_loading, lo, hi);
      if (known_process) {
        parts[size_t(Phase::Backward)] = clipped(backward[thread.process], lo, hi);
        parts[size_t(Phase::Compile)] = clipped(compile[thread.process].all, lo, hi);
      }

      StepPhases row;
      row.step = numbers[s];
      row.pid = known_process ? t.processes[thread.process].pid : 0;
      row.tid = thread.tid;
      row.wall_ns = hi - lo;
      Intervals claimed;
      std::array<const Intervals*, std::size(kPriority)> ordered{};
      for (size_t i = 0; i < ordered.size(); ++i) ordered[i] = &parts[size_t(kPriority[i])];
      const auto got = detail::claim(ordered, claimed);
      for (size_t i = 0; i < ordered.size(); ++i) row.ns[size_t(kPriority[i])] = got[i];
      row.ns[size_t(Phase::Other)] = row.wall_ns - detail::length(claimed);
      out.push_back(row);
    }
  }
  return out;
}

PhaseTimes phase_totals(const std::vector<StepPhases>& steps) {
  PhaseTimes total{};
  for (const StepPhases& s : steps)
    for (size_t p = 0; p < kPhaseCount; ++p) total[p] = ptprof::detail::saturating_add(total[p], s.ns[p]);
  return total;
}

}  // namespace ptprof::report
