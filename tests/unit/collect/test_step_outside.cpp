// The time before the first step and after the last (issue #23), in the
// collector: where the first step's iteration began (SetupSplit), the setup
// split off step 0 (WindowBook::split_first_step), the process's last step
// as the time after the steps or, after a kill, a partial step
// (WindowBook::end_last_step); and the summary's lines on steps
// (cli/step_summary.hpp).
#include <catch2/catch.hpp>

#include "cli/step_summary.hpp"
#include "collect/setup_split.hpp"
#include "collect/window_book.hpp"
#include "collector_fixtures.hpp"

using ptprof::launcher::SetupSplit;
using ptprof::launcher::StepFacts;
using ptprof::launcher::Window;
using ptprof::launcher::WindowBook;
using ptprof::testing::SyntheticRegion;
using ptprof::wire::BoundaryKind;
namespace trace = ptprof::trace;

namespace {

bool contains(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& l : lines)
    if (l.find(text) != std::string::npos) return true;
  return false;
}

// A book whose window 0 is open from tick 0, with step 0 begun at 10 and
// step 1 at 50 on thread 1.
WindowBook book_with_two_steps() {
  SyntheticRegion region(1);
  region.boundary(BoundaryKind::WindowBegin, 0, 0);
  WindowBook book;
  book.read_boundaries(region.header());
  book.step_began(10, 0, 1);
  book.step_began(50, 1, 1);
  return book;
}

}  // namespace

TEST_CASE("setup split: step 1's first top-level span, last begun in step 0, is where step 0's iteration began",
          "[steps]") {
  SetupSplit split;
  split.step_began(0, 1, 10);
  split.top_level_span(1, /*name=*/7, 20);  // setup: model build
  split.top_level_span(1, /*name=*/5, 30);  // the iteration's scope, first call
  split.top_level_span(2, /*name=*/5, 35);  // another thread: not the stepping one
  split.step_began(1, 1, 50);
  CHECK_FALSE(split.take_first_step_start());
  split.top_level_span(1, 5, 55);  // the iteration's scope again: step 1 begins with it
  CHECK(split.take_first_step_start() == std::optional<uint64_t>(30));
  CHECK_FALSE(split.take_first_step_start());  // once
}

TEST_CASE("setup split: nothing when step 1 begins with what step 0 never ran, or step 0 was not recorded", "[steps]") {
  SetupSplit unseen;
  unseen.step_began(0, 1, 10);
  unseen.top_level_span(1, 7, 20);
  unseen.step_began(1, 1, 50);
  unseen.top_level_span(1, 9, 55);
  CHECK_FALSE(unseen.take_first_step_start());
  SetupSplit skipped;  // a schedule that does not record step 0
  skipped.step_began(2, 1, 10);
  skipped.top_level_span(1, 7, 20);
  skipped.step_began(3, 1, 50);
  skipped.top_level_span(1, 7, 55);
  CHECK_FALSE(skipped.take_first_step_start());
}

TEST_CASE("window book: the setup is split off step 0 and the last step is the time after the steps", "[steps]") {
  WindowBook book = book_with_two_steps();
  book.split_first_step(30);
  Window& w = book.at(0);
  WindowBook::end_last_step(w, 80, /*clean_exit=*/true);
  REQUIRE(w.steps.closed.size() == 3);
  CHECK(w.steps.closed[0].flags == trace::kBeforeSteps);
  CHECK(w.steps.closed[0].start == 10);
  CHECK(w.steps.closed[0].end == 30);
  CHECK(w.steps.closed[1].flags == 0);
  CHECK(w.steps.closed[1].start == 30);
  CHECK(w.steps.closed[1].end == 50);
  CHECK(w.steps.closed[2].flags == trace::kAfterSteps);
  CHECK(w.steps.closed[2].number == 1);
}

TEST_CASE("window book: a killed process's last step is partial; a process that never ended a step has none",
          "[steps]") {
  WindowBook killed = book_with_two_steps();
  WindowBook::end_last_step(killed.at(0), 70, /*clean_exit=*/false);
  REQUIRE(killed.at(0).steps.closed.size() == 2);
  CHECK(killed.at(0).steps.closed[1].flags == trace::kTruncated);
  CHECK(killed.at(0).steps.closed[1].end == 70);

  SyntheticRegion region(1);
  region.boundary(BoundaryKind::WindowBegin, 0, 0);
  WindowBook no_steps;
  no_steps.read_boundaries(region.header());
  no_steps.step_began(10, 0, 1);
  WindowBook::end_last_step(no_steps.at(0), 70, /*clean_exit=*/true);
  CHECK(no_steps.at(0).steps.closed.empty());
  CHECK_FALSE(no_steps.at(0).steps.open);
}

TEST_CASE("step summary: why nothing was recorded, and what to try", "[steps]") {
  ptprof::Schedule schedule{.enabled = true, .wait = 1, .warmup = 1, .active = 3};
  ptprof::StepRule optimizer;
  StepFacts inference{.pid = 7, .steps_ended = 0, .dataloader_batches = 6};
  auto lines = ptprof::cli::step_summary_lines(inference, optimizer, schedule, 0);
  CHECK(contains(lines, "steps: 0 ended in process 7 (rule: optimizer"));
  CHECK(contains(lines, "the schedule records from step 2"));
  CHECK(contains(lines, "--step dataloader: this program took 6 batches"));

  StepFacts short_job{.pid = 7, .steps_ended = 1, .optimizer_steps = 1};
  lines = ptprof::cli::step_summary_lines(short_job, optimizer, schedule, 0);
  CHECK(contains(lines, "a shorter schedule: --schedule wait=0,warmup=0,active=1"));
  CHECK_FALSE(contains(lines, "--step dataloader"));

  ptprof::StepRule named;
  named.kind = ptprof::StepRule::Kind::Named;
  named.name = "no_such";
  StepFacts never{.pid = 7, .steps_ended = 0, .optimizer_steps = 4};
  lines = ptprof::cli::step_summary_lines(never, named, schedule, 0);
  CHECK(contains(lines, "--step 'no_such' (PTPROF_STEP) never occurred"));
  CHECK(contains(lines, "--step optimizer: an optimizer stepped 4 times"));

  StepFacts enough{.pid = 7, .steps_ended = 9, .optimizer_steps = 9};
  lines = ptprof::cli::step_summary_lines(enough, optimizer, schedule, 1);
  CHECK(lines.size() == 1);  // nothing to explain
}

TEST_CASE("step summary: auto says which rule it used", "[steps]") {
  ptprof::StepRule rule;
  rule.kind = ptprof::StepRule::Kind::Auto;
  StepFacts f{.pid = 7,
              .steps_ended = 6,
              .dataloader_batches = 6,
              .auto_rule = uint32_t(ptprof::StepRule::Kind::DataLoader) + 1};
  CHECK(contains(ptprof::cli::step_summary_lines(f, rule, {}, 1), "auto, which used the DataLoader"));
  StepFacts loop{.pid = 7, .steps_ended = 6, .forwards = 6, .auto_rule = uint32_t(ptprof::StepRule::Kind::Forward) + 1};
  CHECK(contains(ptprof::cli::step_summary_lines(loop, rule, {}, 1), "auto, which used the model's forward"));
}

TEST_CASE("step summary: the model's forward", "[steps]") {
  ptprof::Schedule schedule{.enabled = true, .wait = 1, .warmup = 1, .active = 3};
  // An inference loop with neither an optimizer nor a DataLoader: the
  // default rule suggests the forward (which it does not watch).
  StepFacts loop{.pid = 7, .steps_ended = 0};
  auto lines = ptprof::cli::step_summary_lines(loop, ptprof::StepRule{}, schedule, 0);
  CHECK(contains(lines, "--step forward (or --step auto)"));
  // --step forward in a process where no module's forward ended.
  ptprof::StepRule forward;
  forward.kind = ptprof::StepRule::Kind::Forward;
  lines = ptprof::cli::step_summary_lines(loop, forward, schedule, 0);
  CHECK(contains(lines, "--step forward (PTPROF_STEP): no torch.nn.Module's forward ended"));
  CHECK_FALSE(contains(lines, "--step forward (or --step auto)"));
  StepFacts ran{.pid = 7, .steps_ended = 6, .forwards = 6};
  lines = ptprof::cli::step_summary_lines(ran, forward, schedule, 1);
  CHECK(contains(lines, "(rule: forward (the end of each outermost call"));
  CHECK(lines.size() == 1);
}
