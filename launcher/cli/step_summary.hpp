// The summary's lines on steps: how many ended, by which rule, which
// windows were recorded, and, when that is fewer than the schedule asked
// for, why and what to try. Pure, so that every case is tested as text.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "collect/process_collector.hpp"
#include "ptprof/schedule.hpp"

namespace ptprof::cli {

std::vector<std::string> step_summary_lines(const launcher::StepFacts& facts, const StepRule& rule,
                                            const Schedule& schedule, uint32_t windows_recorded);

}  // namespace ptprof::cli
