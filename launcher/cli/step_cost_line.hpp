// The summary's line on what recording cost the program's own steps
// (ProcessHeader::step_cost_*, the agent's step_cost_meter.hpp), next to
// the start-up estimate of the cost line. Pure, so that it is tested as text.
#pragma once
#include <optional>
#include <string>

#include "collect/process_collector.hpp"

namespace ptprof::cli {

// None when the process measured nothing (no schedule with steady steps on
// both sides). `estimate_ns_per_op`: the start-up estimate the cost line
// charged each operator (0: none).
std::optional<std::string> step_cost_line(const launcher::StepFacts& f, double estimate_ns_per_op);

}  // namespace ptprof::cli
