// What recording costs this process, measured on its own steps: the CPU
// time of the thread that ends the steps, each steady recorded step against
// the steady unrecorded step before it (a schedule's wait steps), the
// median of those differences. The start-up calibration (record/cost_calibration.hpp)
// times a tiny training step of its own, whose operators are not the
// program's; this needs a schedule with steps on both sides, and then says
// what the program's own steps paid (docs/performance.md, issue #27 item 3).
// Pairs, not the medians of each kind: the steps of one kind are not spread
// over the run as the other's are (two recorded to one unrecorded in
// wait=2,active=3), so a machine that slows down for a while moved the two
// medians apart by more than ptprof's cost; a recorded step and the
// unrecorded one before it are a few steps apart.
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
    int64_t added_ns = 0;        // median of (steady recorded step - the steady unrecorded step before it)
    uint64_t unrecorded_ns = 0;  // median steady unrecorded step
    uint32_t ops = 0;            // median operators recorded per steady recorded step, on that thread
    uint32_t pairs = 0;          // recorded steps measured against an unrecorded one
    uint32_t unrecorded_steps = 0;
  };

  // Step `step` ended on thread `thread` (any stable key), whose CPU time is
  // now `cpu_ns` and which has recorded `ops` operators so far; `began` and
  // `ended`: whether the step was recording when it began and when it ended.
  void step_ended(uint64_t step, const void* thread, uint64_t cpu_ns, uint64_t ops, bool began, bool ended) {
    const bool steady =
        thread == thread_ && began == ended && previous_ == (began ? kRecorded : kUnrecorded) && step >= kFirstSteady;
    if (steady) {
      const uint64_t ns = cpu_ns - cpu_ns_;
      if (!began) {
        unrecorded_.push(ns);
        last_unrecorded_ns_ = ns;
        have_unrecorded_ = true;
      } else if (have_unrecorded_) {
        added_.push(int64_t(ns) - int64_t(last_unrecorded_ns_));
        ops_.push(ops - ops_seen_);
      }
    }
    if (thread != thread_) have_unrecorded_ = false;  // another thread's time is not comparable
    thread_ = thread;
    cpu_ns_ = cpu_ns;
    ops_seen_ = ops;
    previous_ = began != ended ? kMixed : ended ? kRecorded : kUnrecorded;
  }

  // Steps ended without a call (runtime/python_step_folding.cpp): the next call's
  // CPU time spans several steps.
  void steps_folded() { previous_ = kMixed; }

  // The medians, once there are kMinSteps pairs and unrecorded steps.
  std::optional<Figures> figures() const {
    if (added_.count < kMinSteps || unrecorded_.count < kMinSteps) return std::nullopt;
    Figures f;
    f.added_ns = added_.median();
    f.unrecorded_ns = unrecorded_.median();
    f.ops = uint32_t(std::min<uint64_t>(ops_.median(), UINT32_MAX));
    f.pairs = added_.count;
    f.unrecorded_steps = unrecorded_.count;
    return f;
  }

 private:
  // The newest kKept values, and how many were seen.
  template <class T>
  struct Newest {
    std::array<T, kKept> v{};
    uint32_t count = 0;

    void push(T x) { v[count++ % kKept] = x; }
    T median() const {
      std::array<T, kKept> copy = v;
      const uint32_t n = std::min(count, kKept);
      auto mid = copy.begin() + n / 2;
      std::nth_element(copy.begin(), mid, copy.begin() + n);
      return *mid;
    }
  };

  Newest<int64_t> added_;
  Newest<uint64_t> unrecorded_;
  Newest<uint64_t> ops_;
  uint64_t last_unrecorded_ns_ = 0;
  bool have_unrecorded_ = false;  // a steady unrecorded step on this thread came before
  const void* thread_ = nullptr;
  uint64_t cpu_ns_ = 0;
  uint64_t ops_seen_ = 0;
  // The last step: recorded throughout, unrecorded throughout, or both (a
  // window opened or closed inside it, by time).
  enum State : uint8_t { kMixed, kRecorded, kUnrecorded };
  State previous_ = kMixed;
};

}  // namespace ptprof::agent
