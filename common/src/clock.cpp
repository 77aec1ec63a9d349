#include "ptprof/clock.hpp"

#include <fstream>
#include <string>

namespace ptprof::clock {

bool tsc_usable() {
#if defined(__x86_64__)
  std::ifstream cs("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string source;
  if (cs >> source && source == "tsc") return true;
  // The kernel may prefer kvm-clock in a VM while the TSC is still invariant.
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) == 0) {
      return line.find(" constant_tsc") != std::string::npos && line.find(" nonstop_tsc") != std::string::npos;
    }
  }
#endif
  return false;
}

Converter::Converter(Kind k) : kind_(k) {
  if (kind_ == Kind::Monotonic) return;
  sample(first_ticks_, first_ns_);
  // A first slope from a short interval; resample() refines it.
  uint64_t t1, n1;
  do {
    sample(t1, n1);
  } while (n1 - first_ns_ < 5'000'000);
  ns_per_tick_ = double(n1 - first_ns_) / double(t1 - first_ticks_);
  segments_ = {Segment{t1, int64_t(n1), ns_per_tick_}};
}

void Converter::sample(uint64_t& t, uint64_t& ns) const {
  // Bracket the clock_gettime between two tick reads and keep the tightest
  // of a few tries, so the pair is accurate to a few tens of ns.
  uint64_t best = ~0ull;
  for (int i = 0; i < 5; ++i) {
    uint64_t a = ticks_ordered(kind_);
    uint64_t n = monotonic_ns();
    uint64_t b = ticks_ordered(kind_);
    if (b - a < best) {
      best = b - a;
      t = a + (b - a) / 2;
      ns = n;
    }
  }
}

void Converter::resample() {
  if (kind_ == Kind::Monotonic) return;
  uint64_t t, ns;
  sample(t, ns);
  const Segment& last = segments_.back();
  if (t <= first_ticks_ || ns <= first_ns_ || t <= last.ticks) return;
  ns_per_tick_ = double(ns - first_ns_) / double(t - first_ticks_);
  const int64_t at = to_ns(t);
  const double interval = double(t - last.ticks);
  // Converges on the sampled clock over the next interval; never flat or
  // backwards, whatever the sample says.
  const double slope = (double(int64_t(ns) - at) + interval * ns_per_tick_) / interval;
  segments_.push_back(Segment{t, at, std::max(slope, ns_per_tick_ / 2)});
}

}  // namespace ptprof::clock
