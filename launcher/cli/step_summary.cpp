#include "cli/step_summary.hpp"

#include <algorithm>

namespace ptprof::cli {
namespace {

std::string plural(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string rule_used(const launcher::StepFacts& f, const StepRule& rule) {
  if (rule.kind != StepRule::Kind::Auto) return rule.describe();
  if (f.auto_rule == uint32_t(StepRule::Kind::Optimizer) + 1)
    return "auto, which used the optimizer (the end of Optimizer.step)";
  if (f.auto_rule == uint32_t(StepRule::Kind::DataLoader) + 1)
    return "auto, which used the DataLoader (no optimizer stepped)";
  if (f.auto_rule == uint32_t(StepRule::Kind::Forward) + 1)
    return "auto, which used the model's forward (no optimizer stepped, no DataLoader)";
  return "auto (neither an optimizer, a DataLoader nor a model's forward stepped)";
}

// The steps before the schedule's first recorded (active) step, and the
// steps its first window needs.
uint64_t steps_before_active(const Schedule& s) { return s.skip_first + s.wait + s.warmup; }

// What else would have ended steps in this program.
std::vector<std::string> what_to_try(const launcher::StepFacts& f, const StepRule& rule, const Schedule& schedule) {
  std::vector<std::string> out;
  const bool by_optimizer = rule.kind == StepRule::Kind::Optimizer || rule.kind == StepRule::Kind::Auto;
  if (f.dataloader_batches > 0 && rule.kind != StepRule::Kind::DataLoader && f.optimizer_steps == 0)
    out.push_back("--step dataloader: this program took " + plural(f.dataloader_batches, "batch", "batches") +
                  " from a DataLoader");
  if (f.optimizer_steps > 0 && !by_optimizer)
    out.push_back("--step optimizer: an optimizer stepped " + plural(f.optimizer_steps, "time", "times"));
  // The model's forward is seen only under the rules that watch it (the
  // module hooks cost every module call), so it is suggested unseen.
  const bool watches_forward = rule.kind == StepRule::Kind::Forward || rule.kind == StepRule::Kind::Auto;
  if (f.optimizer_steps == 0 && f.dataloader_batches == 0 && !watches_forward)
    out.push_back(
        "--step forward (or --step auto): the end of each call of the model, the first torch.nn.Module called "
        "outside any other (an inference or evaluation loop without a DataLoader)");
  if (f.optimizer_steps == 0 && f.dataloader_batches == 0)
    out.push_back(
        "--step NAME: a record_function or operator that runs once per iteration (for example --step "
        "aten::linear; `ptprof report` of a run without a schedule lists them), or ptprof.step() in the loop "
        "with --step manual");
  if (schedule.enabled && f.steps_ended > 0 && f.steps_ended <= steps_before_active(schedule))
    out.push_back("a shorter schedule: --schedule wait=0,warmup=0,active=" +
                  std::to_string(std::max<uint64_t>(1, std::min<uint64_t>(f.steps_ended, schedule.active))));
  return out;
}

}  // namespace

std::vector<std::string> step_summary_lines(const launcher::StepFacts& f, const StepRule& rule,
                                            const Schedule& schedule, uint32_t windows_recorded) {
  std::vector<std::string> out;
  if (rule.kind == StepRule::Kind::CudaProfilerApi || rule.kind == StepRule::Kind::Manual) {
    out.push_back("ptprof: steps: " + std::to_string(f.steps_ended) + " ended (rule: " + rule.describe() + "); " +
                  plural(windows_recorded, "window", "windows") + " recorded");
    return out;
  }
  out.push_back("ptprof: steps: " + std::to_string(f.steps_ended) + " ended in process " + std::to_string(f.pid) +
                " (rule: " + rule_used(f, rule) + "); " + plural(windows_recorded, "window", "windows") + " recorded" +
                (schedule.enabled ? " (schedule " + schedule.to_string() + ")" : ""));
  if (rule.kind == StepRule::Kind::Named && f.named == 0)
    out.push_back("ptprof: warning: --step '" + rule.name +
                  "' (PTPROF_STEP) never occurred: no record_function, range or operator of that name ended");
  if (rule.kind == StepRule::Kind::Forward && f.forwards == 0)
    out.push_back(
        "ptprof: warning: --step forward (PTPROF_STEP): no torch.nn.Module's forward ended in this process "
        "(the rule needs torch imported in a Python that ran ptprof's bootstrap: not `python -S` or `-I`)");
  const bool short_of_schedule =
      schedule.enabled && (windows_recorded == 0 || (schedule.repeat > 0 && windows_recorded < schedule.repeat));
  if (!short_of_schedule && f.steps_ended > 0) return out;
  std::string why;
  if (f.steps_ended == 0)
    why = "no step ended, so all of the run was the time before step 1";
  else
    why = "the run ended " + plural(f.steps_ended, "step", "steps");
  if (schedule.enabled)
    why += "; the schedule records from step " + std::to_string(steps_before_active(schedule)) + " (after " +
           std::to_string(schedule.skip_first) + " skipped, " + std::to_string(schedule.wait) + " waiting and " +
           std::to_string(schedule.warmup) + " warmup steps) and asked for " +
           (schedule.repeat > 0 ? plural(schedule.repeat, "window", "windows") : std::string("windows until the end"));
  out.push_back("ptprof: " + why + ". What to try:");
  for (const std::string& t : what_to_try(f, rule, schedule)) out.push_back("ptprof:   " + t);
  if (!schedule.enabled && f.steps_ended == 0)
    out.push_back("ptprof:   (without steps, everything is recorded as one window: see `ptprof report`)");
  return out;
}

}  // namespace ptprof::cli
