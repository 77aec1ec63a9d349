// The output directory of `ptprof run`, checked before the target starts.
#pragma once
#include <string>

#include "ptprof/status.hpp"

namespace ptprof::launcher {

// Creates `dir` if needed and proves that a file can be created, written and
// removed in it (permission bits do not tell: root ignores them, a read-only
// mount or a full disk does not show in them). An error says what failed.
Status prepare_output_dir(const std::string& dir);

}  // namespace ptprof::launcher
