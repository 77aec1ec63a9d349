// The words for the losses ledger (trace::Losses), one line per kind of loss,
// so the run summary, `info` and `report` say the same thing.
#pragma once
#include <string>
#include <vector>

#include "ptprof/trace.hpp"

namespace ptprof::trace {

// One sentence per nonzero count; empty when nothing was lost.
std::vector<std::string> loss_lines(const Losses& l);

}  // namespace ptprof::trace
