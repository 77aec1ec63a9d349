// How many threads the launcher's parallel work takes: from the environment
// when the user says, else from the cores it may run on.
#pragma once
#include <optional>

#include "ptprof/status.hpp"

namespace ptprof::cli {

// `var` as a number of threads: nullopt when unset or empty, an error
// (naming the variable, its value and what it takes) when it is not a whole
// number from 1 to 1024.
Result<std::optional<unsigned>> threads_from_env(const char* var);

// The cores this process may run on (its affinity mask, as a container's
// cpuset limits it), else the machine's.
unsigned usable_cores();

// The threads `ptprof run` drains a session's processes on
// (CollectorOptions::drain_threads): PTPROF_DRAIN_THREADS when set, else a
// quarter of the usable cores, from 1 to 8. The launcher shares the machine
// with the job it profiles, so it takes a share of the cores where there are
// many (a GPU node's ranks and their DataLoader workers) and one thread on a
// small machine, where a second would only take turns with the job.
Result<unsigned> drain_threads();

}  // namespace ptprof::cli
