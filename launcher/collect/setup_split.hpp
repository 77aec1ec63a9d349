// Where the first step really begins. The agent's step 0 runs from the
// region's start (or torch's import) to the first step's end, so it holds the
// program's setup (imports, the model's build) as well as the first
// iteration. A loop repeats itself: the first top-level span of step 1 on
// the thread that began it (the iteration's `record_function`, the
// DataLoader's `__next__`, the forward's first op) also began the first
// iteration, so its last top-level occurrence in step 0 is where step 0's
// iteration began; what lies before it is the setup ("before step 1").
// Nothing found (step 1 begins with something step 0 never ran): no split.
#pragma once
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>

namespace ptprof::launcher {

class SetupSplit {
 public:
  // A span began at `ticks` on `instance` with nothing open on that thread.
  void top_level_span(uint32_t instance, uint32_t name, uint64_t ticks) {
    if (state_ == State::InFirstStep) {
      last_begin_[key(instance, name)] = ticks;
    } else if (state_ == State::WaitingForStepOne && instance == step_one_instance_ && ticks >= step_one_begin_) {
      state_ = State::Done;
      if (auto it = last_begin_.find(key(instance, name)); it != last_begin_.end()) found_ = it->second;
      last_begin_.clear();
    }
  }
  // A Step record: step `number` begins at `ticks` on `instance`.
  void step_began(uint64_t number, uint32_t instance, uint64_t ticks) {
    if (state_ == State::BeforeAnyStep) {
      state_ = number == 0 ? State::InFirstStep : State::Done;  // a schedule skipped step 0: it is not recorded
    } else if (state_ == State::InFirstStep && number == 1) {
      state_ = State::WaitingForStepOne;
      step_one_instance_ = instance;
      step_one_begin_ = ticks;
    } else if (state_ == State::InFirstStep && number != 0) {
      state_ = State::Done;
      last_begin_.clear();
    }
  }
  // The tick where step 0's iteration began, once found (handed out once).
  std::optional<uint64_t> take_first_step_start() { return std::exchange(found_, std::nullopt); }

 private:
  enum class State : uint8_t { BeforeAnyStep, InFirstStep, WaitingForStepOne, Done };
  static uint64_t key(uint32_t instance, uint32_t name) { return (uint64_t(instance) << 32) | name; }

  State state_ = State::BeforeAnyStep;
  std::unordered_map<uint64_t, uint64_t> last_begin_;  // (instance, name) -> its last top-level begin in step 0
  uint32_t step_one_instance_ = 0;
  uint64_t step_one_begin_ = 0;
  std::optional<uint64_t> found_;
};

}  // namespace ptprof::launcher
