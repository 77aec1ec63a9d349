#include "cli/step_cost_line.hpp"

#include <cstdio>

namespace ptprof::cli {

std::optional<std::string> step_cost_line(const launcher::StepFacts& f, double estimate_ns_per_op) {
  if (f.cost_pairs == 0 || f.cost_unrecorded_steps == 0 || f.cost_unrecorded_ns == 0) return std::nullopt;
  char how[240];
  std::snprintf(how, sizeof how,
                "process %d, the stepping thread's CPU time: %u steady recorded steps, each against the steady "
                "unrecorded step before it, of %u",
                f.pid, f.cost_pairs, f.cost_unrecorded_steps);
  char buf[600];
  if (f.cost_added_ns <= 0) {
    // Noise larger than the cost (few operators per step, a busy machine).
    std::snprintf(buf, sizeof buf,
                  "ptprof: measured on its own steps (%s): recorded steps were no slower than unrecorded ones "
                  "(median difference %+.3f ms, unrecorded step %.3f ms; %u ops per step)",
                  how, double(f.cost_added_ns) / 1e6, double(f.cost_unrecorded_ns) / 1e6, f.cost_ops);
    return std::string(buf);
  }
  const double added = double(f.cost_added_ns);
  int n = std::snprintf(buf, sizeof buf,
                        "ptprof: measured on its own steps (%s): +%.3f ms per recorded step (median; +%.1f%%)", how,
                        added / 1e6, 100 * added / double(f.cost_unrecorded_ns));
  if (f.cost_ops > 0) {
    char estimate[64] = "";
    if (estimate_ns_per_op > 0)
      std::snprintf(estimate, sizeof estimate, "; start-up estimate %.1f ns", estimate_ns_per_op);
    std::snprintf(buf + n, sizeof buf - size_t(n), ", %.1f ns per op (%u ops per step%s)", added / f.cost_ops,
                  f.cost_ops, estimate);
  }
  return std::string(buf);
}

}  // namespace ptprof::cli
