// What recording costs this process, measured on its own steps: the CPU
// time of the thread that ends the steps, in steady recorded steps against
// steady unrecorded ones of the same run (a schedule's wait steps), medians
// of each. The start-up calibration (cost_calibration.hpp) times a tiny
// training step of its own, whose operators are not the program's; this
// needs a schedule with steps on both sides, and then says what the
// program's own steps paid (docs/performance.md, issue #27 item 3).
//
// Steady: a step whose recording state is that of the step before it (not
// the first of a window, nor the first after one: a window's start and end
// leave caches cold) and that began after the process's first steps (lazy
// initialisation). Pure bookkeeping, fed at each step's end under the step
// lock; trivially destructible, like the runtime object that holds it.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>

namespace ptprof::agent {

class StepCostMeter {
 public:
  // Steps of each kind kept (the newest), and the fewest of each for a figure.
  static constexpr uint32_t kKept = 64;
  static constexpr uint32_t kMinSteps = 3;
  // Steps that begin a process are never steady: imports, first calls.
  static constexpr uint64_t kFirstSteady = 2;

  struct Figures {
    uint64_t recorded_ns = 0;    // median steady recorded step
    uint64_t unrecorded_ns = 0;  // median steady unrecorded step
    uint32_t ops = 0;            // median operators recorded per steady recorded step, on that thread
    uint32_t recorded_steps = 0;
    uint32_t unrecorded_steps = 0;
  };

  // Step `step` ended on thread `thread` (any stable key), whose CPU time is
  // now `cpu_ns` and which has recorded `ops` operators so far; `began` and
  // `ended`: whether the step was recording when it began and when it ended.
  void step_ended(uint64_t step, const void* thread, uint64_t cpu_ns, uint64_t ops, bool began, bool ended) {
    const bool steady =
        thread == thread_ && began == ended && previous_ == (began ? kRecorded : kUnrecorded) && step >= kFirstSteady;
    if (steady) {
      Kind& k = began ? recorded_ : unrecorded_;
      k.push(cpu_ns - cpu_ns_, ops - ops_);
    }
    thread_ = thread;
    cpu_ns_ = cpu_ns;
    ops_ = ops;
    previous_ = began != ended ? kMixed : ended ? kRecorded : kUnrecorded;
  }

  // The medians, once each kind has kMinSteps steady steps.
  std::optional<Figures> figures() const {
    if (recorded_.count < kMinSteps || unrecorded_.count < kMinSteps) return std::nullopt;
    Figures f;
    f.recorded_ns = recorded_.median_ns();
    f.unrecorded_ns = unrecorded_.median_ns();
    f.ops = uint32_t(std::min<uint64_t>(recorded_.median_ops(), UINT32_MAX));
    f.recorded_steps = recorded_.count;
    f.unrecorded_steps = unrecorded_.count;
    return f;
  }

 private:
  struct Kind {
    std::array<uint64_t, kKept> ns{};
    std::array<uint64_t, kKept> ops{};
    uint32_t count = 0;  // steps seen (all-time; the newest kKept are kept)

    void push(uint64_t step_ns, uint64_t step_ops) {
      ns[count % kKept] = step_ns;
      ops[count % kKept] = step_ops;
      ++count;
    }
    static uint64_t median(std::array<uint64_t, kKept> v, uint32_t n) {
      auto mid = v.begin() + n / 2;
      std::nth_element(v.begin(), mid, v.begin() + n);
      return *mid;
    }
    uint64_t median_ns() const { return median(ns, std::min(count, kKept)); }
    uint64_t median_ops() const { return median(ops, std::min(count, kKept)); }
  };

  Kind recorded_, unrecorded_;
  const void* thread_ = nullptr;
  uint64_t cpu_ns_ = 0;
  uint64_t ops_ = 0;
  // The last step: recorded throughout, unrecorded throughout, or both (a
  // window opened or closed inside it, by time).
  enum State : uint8_t { kMixed, kRecorded, kUnrecorded };
  State previous_ = kMixed;
};

}  // namespace ptprof::agent
