// The words for the losses ledger (trace::Losses), one line per kind of loss,
// so the run summary, `info` and `report` say the same thing.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "ptprof/trace.hpp"

namespace ptprof::trace {

// The name an event gets when the agent's string arena refused its own (the
// launcher writes it instead of an empty name; `unnamed_events` counts them).
inline constexpr std::string_view kLostName = "<name lost: the string arena was full>";

// One sentence per nonzero count; empty when nothing was lost.
std::vector<std::string> loss_lines(const Losses& l);

}  // namespace ptprof::trace
