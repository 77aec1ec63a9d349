// The session clock. On x86-64 with an invariant TSC the agent stamps events
// with raw TSC ticks (a few ns, no syscall, no vDSO); elsewhere it uses
// CLOCK_MONOTONIC nanoseconds. The launcher turns ticks into CLOCK_MONOTONIC
// nanoseconds with a line fitted to (ticks, ns) pairs it samples itself.
#pragma once
#include <algorithm>
#include <cstdint>
#include <ctime>
#include <vector>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace ptprof::clock {

enum class Kind : uint32_t { Monotonic = 0, Tsc = 1 };

inline uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

inline uint64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

inline uint64_t ticks(Kind k) {
#if defined(__x86_64__)
  if (k == Kind::Tsc) [[likely]]
    return __rdtsc();
#endif
  (void)k;
  return monotonic_ns();
}

// Ordered read: no earlier load or store drifts past it. Used where the
// launcher and agent agree on "before" across cores (window boundaries).
inline uint64_t ticks_ordered(Kind k) {
#if defined(__x86_64__)
  if (k == Kind::Tsc) {
    _mm_mfence();
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
  }
#endif
  (void)k;
  return monotonic_ns();
}

// True when the TSC runs at a constant rate across cores and sleep states,
// i.e. when the kernel itself trusts it as the clock source.
bool tsc_usable();

// Linear map ticks -> CLOCK_MONOTONIC ns. For Kind::Monotonic it is identity.
class Converter {
 public:
  explicit Converter(Kind k = Kind::Monotonic);
  Kind kind() const { return kind_; }
  // Takes a fresh (ticks, ns) sample; the slope is fitted between the first
  // sample and the newest, so it gets more precise as the run goes on. The
  // map from then on is a new line that starts where the previous one is at
  // the sample's ticks and meets the fitted line one interval later: the map
  // is continuous and increasing, and a tick gives the same ns whether it is
  // converted before or after a resample (spans stay nested: a parent
  // converted later than its children still starts before them).
  void resample();
  int64_t to_ns(uint64_t t) const {
    if (kind_ == Kind::Monotonic) return int64_t(t);
    const Segment& s = segment_of(t);
    return s.ns + int64_t(double(int64_t(t - s.ticks)) * s.ns_per_tick);
  }
  double ns_per_tick() const { return ns_per_tick_; }

 private:
  void sample(uint64_t& t, uint64_t& ns) const;
  // One line of the map, from `ticks` to the next segment's.
  struct Segment {
    uint64_t ticks = 0;
    int64_t ns = 0;
    double ns_per_tick = 1.0;
  };
  const Segment& segment_of(uint64_t t) const {
    if (t >= segments_.back().ticks) [[likely]]
      return segments_.back();
    auto it = std::upper_bound(segments_.begin(), segments_.end(), t,
                               [](uint64_t v, const Segment& s) { return v < s.ticks; });
    return it == segments_.begin() ? *it : *(it - 1);
  }
  Kind kind_;
  uint64_t first_ticks_ = 0, first_ns_ = 0;
  double ns_per_tick_ = 1.0;
  std::vector<Segment> segments_{Segment{}};  // by ticks; ten a second of run
};

}  // namespace ptprof::clock
