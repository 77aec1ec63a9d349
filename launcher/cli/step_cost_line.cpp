#include "cli/step_cost_line.hpp"

#include <cstdio>

namespace ptprof::cli {

std::optional<std::string> step_cost_line(const launcher::StepFacts& f, double estimate_ns_per_op) {
  if (f.cost_recorded_steps == 0 || f.cost_unrecorded_steps == 0 || f.cost_unrecorded_ns == 0) return std::nullopt;
  char how[200];
  std::snprintf(how, sizeof how,
                "process %d, the stepping thread's CPU time, medians of %u recorded and %u unrecorded steady steps",
                f.pid, f.cost_recorded_steps, f.cost_unrecorded_steps);
  char estimate[64] = "";
  if (estimate_ns_per_op > 0)
    std::snprintf(estimate, sizeof estimate, "; start-up estimate %.1f ns", estimate_ns_per_op);
  char buf[512];
  if (f.cost_recorded_ns <= f.cost_unrecorded_ns) {
    // Noise larger than the cost (few operators per step, a busy machine).
    std::snprintf(buf, sizeof buf,
                  "ptprof: measured on its own steps (%s): recorded steps were no slower than unrecorded ones "
                  "(%.3f against %.3f ms; %u ops per step)",
                  how, double(f.cost_recorded_ns) / 1e6, double(f.cost_unrecorded_ns) / 1e6, f.cost_ops);
    return std::string(buf);
  }
  const double added = double(f.cost_recorded_ns - f.cost_unrecorded_ns);
  int n = std::snprintf(buf, sizeof buf, "ptprof: measured on its own steps (%s): +%.3f ms per recorded step (+%.1f%%)",
                        how, added / 1e6, 100 * added / double(f.cost_unrecorded_ns));
  if (f.cost_ops > 0)
    std::snprintf(buf + n, sizeof buf - size_t(n), ", %.1f ns per op (%u ops per step%s)", added / f.cost_ops,
                  f.cost_ops, estimate);
  return std::string(buf);
}

}  // namespace ptprof::cli
