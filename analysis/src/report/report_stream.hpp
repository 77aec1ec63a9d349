// A trace's part of a report, computed as its file is read, without holding
// its events: memory grows with the distinct keys, the steps and the depth of
// nesting, not with the events (report_compute.cpp merges the result).
//
// Each thread's events are taken latest first (the launcher writes an event
// when it ends, so a parent then comes ahead of its children) and nest on a
// stack, which gives torch's tree as long as the events nest strictly in that
// order. Traces that do not, and those whose sections need every event at
// once (CUDA, memory, stacks, collectives, the steps' phases), are left to the
// full computation: the result is the same either way.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "ptprof/analysis/report.hpp"
#include "ptprof/cost.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::report::detail {

// Position of an event in torch's function_events order (start, then longer
// first); later inputs and events break ties.
using FirstSeen = std::tuple<int64_t, int64_t, uint32_t, uint32_t>;

struct PartialRow {
  Stats stats;  // count and CPU times
  FirstSeen first{INT64_MAX, INT64_MAX, UINT32_MAX, UINT32_MAX};
  bool is_async = false;  // that of the first event
};

// PartialRow keys: name id << 32 | shapes id (0 unless grouping by shapes);
// a Step without a name has its own.
constexpr uint64_t kUnnamedStepRow = UINT64_MAX;

struct StreamedTrace {
  trace::Trace metadata;  // the trace without its events but the agent's notes on CUDA
  uint64_t events = 0;    // the agent's CUDA notes left out, as the report counts
  cost::Tally cost;
  std::unordered_map<uint64_t, PartialRow> rows;
  std::vector<StepRow> steps;                 // in the full computation's order (thread, then file order)
  std::vector<StepPhases> phases;             // the same steps', when asked for
  std::vector<ProcessEventCounts> processes;  // per process of the trace
};

// What phases an Op or Range (not async) of a step counts for: a union of these.
constexpr uint8_t kMarkForward = 1, kMarkBackward = 2, kMarkOptimizer = 4, kMarkDataLoading = 8;
uint8_t phase_marks(const trace::Event& e, std::string_view name);

// Reads `path` (input number `input` of the report) chunk by chunk. An error
// is read_trace's; nullopt: the trace needs the full computation (its events
// are not read again here). `phases`: the caller needs StepPhases too.
// Warnings go to `warnings` only when a StreamedTrace is returned.
Result<std::optional<StreamedTrace>> stream_trace(const std::string& path, uint32_t input, const Options& options,
                                                  bool phases, std::vector<std::string>* warnings);

}  // namespace ptprof::report::detail
