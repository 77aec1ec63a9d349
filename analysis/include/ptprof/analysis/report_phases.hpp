// Each step's wall time split into forward, backward, optimizer, data loading,
// compile and other, as the TensorBoard plugin's overview split it (compile
// added: torch.compile's compile time, report_compile.hpp); computed from one
// trace's events (docs/report.md, "Phases", states the rule).
//
// Every instant of a ProfilerStep#N span goes to exactly one phase, so the
// phases of a step sum to its wall time. An instant covered by several
// phases' events goes to the first of: compile, data loading, optimizer,
// backward, forward (a compile runs inside the compiled module's call or a
// backward, and traces the model's ops; the DataLoader's and the optimizer's
// own aten ops must not count as forward, nor backward ops run on the step's
// thread); an instant covered by none is "other".
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "ptprof/trace.hpp"

namespace ptprof::report {

// In the order the report shows them.
enum class Phase : uint8_t { Forward, Backward, Optimizer, DataLoading, Compile, Other };
inline constexpr size_t kPhaseCount = 6;
using PhaseTimes = std::array<int64_t, kPhaseCount>;  // ns, indexed by Phase

std::string_view phase_title(Phase p);     // "Data loading"
std::string_view phase_json_key(Phase p);  // "data_loading"

// One ProfilerStep#N span on one thread.
struct StepPhases {
  uint64_t step = 0;
  int32_t pid = 0;
  int32_t tid = 0;
  int64_t wall_ns = 0;
  PhaseTimes ns{};  // sums to wall_ns
};

// The steps of one trace, in the trace's order of threads, then by start.
std::vector<StepPhases> step_phases(const trace::Trace& t);

PhaseTimes phase_totals(const std::vector<StepPhases>& steps);

}  // namespace ptprof::report
