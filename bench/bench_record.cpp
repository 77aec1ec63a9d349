// Cost of recording one event through the C API (ptprof_mark), measured per
// event: each call is bracketed by two clock reads and the cost of an empty
// bracket is subtracted. Events are written in bursts that fit the ring, with
// pauses for the launcher to drain, so what is measured is the recording path,
// not the drop path.
//
//   bench_record latency THREADS      p50/p99 ns per event, per thread
//   bench_record latency-full THREADS the same after the string arena is
//                                     full (run it with PTPROF_NAMES_MB=16),
//                                     for a name it refused: the cost
//                                     of a lost name (no lock, no allocation)
//   bench_record flood SECONDS [THREADS [RATE]]
//                                     THREADS threads (default 1) write as fast
//                                     as they can, or RATE events per second in
//                                     total, paced in bursts of 1000; run under
//                                     ptprof, the launcher's summary gives
//                                     recorded vs dropped (drain rate)
//   bench_record ranges N RATE        N events (nested range pairs, 2 levels)
//                                     from one thread at RATE events per
//                                     second: the long-run benchmark
// Each mode also prints its own CPU time (cpu_s=), so that a caller timing
// `ptprof run` as a whole can tell the launcher's CPU from the target's.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "ptprof.h"
#include "ptprof/clock.hpp"

namespace {

using ptprof::clock::Kind;

constexpr int kBurst = 20000;  // 16 bytes each: well inside a 2 MiB ring
constexpr int kBursts = 50;

Kind clock_kind() { return ptprof::clock::tsc_usable() ? Kind::Tsc : Kind::Monotonic; }

uint64_t empty_bracket(Kind k) {
  std::vector<uint64_t> d(100000);
  for (auto& x : d) {
    uint64_t a = ptprof::clock::ticks(k);
    uint64_t b = ptprof::clock::ticks(k);
    x = b - a;
  }
  std::nth_element(d.begin(), d.begin() + d.size() / 2, d.end());
  return d[d.size() / 2];
}

// Per event: the median over batches of 1000 calls, each timed as a whole:
// not limited by the clock's granularity (a virtualized TSC may tick in steps
// of ~10 ns), and a batch the writer lost its core in does not move it (the
// mean over all batches moved from 10.0 to 13.9 ns between two runs).
double batch_median_ticks(Kind k, const char* name) {
  std::vector<uint64_t> batches;
  batches.reserve(size_t(kBursts) * 10);
  for (int b = 0; b < kBursts; ++b) {
    for (int r = 0; r < 10; ++r) {
      uint64_t a = ptprof::clock::ticks(k);
      for (int i = 0; i < 1000; ++i) ptprof_mark(name);
      batches.push_back(ptprof::clock::ticks(k) - a);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::nth_element(batches.begin(), batches.begin() + ptrdiff_t(batches.size() / 2), batches.end());
  return double(batches[batches.size() / 2]) / 1000.0;
}

void measure(Kind k, uint64_t overhead, const char* name, std::vector<uint64_t>* out) {
  out->reserve(size_t(kBurst) * kBursts);
  for (int b = 0; b < kBursts; ++b) {
    for (int i = 0; i < kBurst; ++i) {
      uint64_t a = ptprof::clock::ticks(k);
      ptprof_mark(name);
      uint64_t c = ptprof::clock::ticks(k);
      out->push_back(c - a > overhead ? c - a - overhead : 0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(8));
  }
}

// More distinct names than the 16 MiB string arena holds, in bursts the
// launcher drains.
void fill_string_arena() {
  char name[96];
  for (int i = 0; i < 400000; ++i) {
    std::snprintf(name, sizeof name, "bench.fill.%08d.padding-padding-padding-padding-padding", i);
    ptprof_mark(name);
    if (i % kBurst == kBurst - 1) std::this_thread::sleep_for(std::chrono::milliseconds(8));
  }
}

int latency(int threads, const char* name) {
  Kind k = clock_kind();
  ptprof::clock::Converter conv(k);
  uint64_t overhead = empty_bracket(k);
  std::vector<std::vector<uint64_t>> samples(static_cast<size_t>(threads));
  std::vector<double> batches(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      measure(k, overhead, name, &samples[size_t(t)]);
      batches[size_t(t)] = batch_median_ticks(k, name);
    });
  for (auto& t : pool) t.join();
  double batch = 0;
  for (double m : batches) batch += m / double(threads);
  std::vector<uint64_t> all;
  for (auto& s : samples) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) { return double(all[size_t(p * double(all.size() - 1))]) * conv.ns_per_tick(); };
  std::printf("threads=%d events=%zu p50_ns=%.1f p90_ns=%.1f p99_ns=%.1f batch_ns=%.1f bracket_ns=%.1f\n", threads,
              all.size(), pct(0.50), pct(0.90), pct(0.99), batch * conv.ns_per_tick(),
              double(overhead) * conv.ns_per_tick());
  return 0;
}

double own_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// rate <= 0: as fast as possible. Otherwise each thread paces itself to
// rate / threads events per second, in bursts of 1000.
int flood(double seconds, int threads, double rate) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  std::atomic<uint64_t> total{0};
  std::vector<std::thread> pool;
  pool.reserve(size_t(threads));
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      uint64_t n = 0;
      const double per_thread = rate / threads;
      while (Clock::now() < end) {
        for (int i = 0; i < 1000; ++i) ptprof_mark("bench.flood");
        n += 1000;
        if (rate > 0) {
          auto due = start + std::chrono::duration<double>(double(n) / per_thread);
          if (due > Clock::now()) std::this_thread::sleep_until(due);
        }
      }
      total += n;
    });
  for (auto& t : pool) t.join();
  std::printf("flood_events=%llu seconds=%.2f threads=%d cpu_s=%.3f\n", (unsigned long long)total.load(), seconds,
              threads, own_cpu_seconds());
  return 0;
}

// n events as ranges, an outer range holding 7 inner ones (like an op with
// its children), paced to `rate` events per second so that nothing drops.
int ranges(uint64_t n, double rate) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  static const char* const kInner[7] = {"bench.aten::mm",  "bench.aten::add",  "bench.aten::relu", "bench.aten::view",
                                        "bench.aten::sum", "bench.aten::copy", "bench.aten::mul"};
  uint64_t written = 0;
  while (written < n) {
    ptprof_range_push("bench.aten::linear");
    for (const char* name : kInner) {
      ptprof_range_push(name);
      ptprof_range_pop();
    }
    ptprof_range_pop();
    written += 8;
    if (written % 8000 == 0) {
      auto due = start + std::chrono::duration<double>(double(written) / rate);
      if (due > Clock::now()) std::this_thread::sleep_until(due);
    }
  }
  std::printf("range_events=%llu seconds=%.2f cpu_s=%.3f\n", (unsigned long long)written,
              std::chrono::duration<double>(Clock::now() - start).count(), own_cpu_seconds());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "latency") == 0) return latency(std::atoi(argv[2]), "bench.event");
  if (argc >= 3 && std::strcmp(argv[1], "latency-full") == 0) {
    fill_string_arena();
    return latency(std::atoi(argv[2]), "bench.name-refused-by-the-full-arena");
  }
  if (argc >= 3 && std::strcmp(argv[1], "flood") == 0)
    return flood(std::atof(argv[2]), argc >= 4 ? std::max(1, std::atoi(argv[3])) : 1,
                 argc >= 5 ? std::atof(argv[4]) : 0);
  if (argc >= 4 && std::strcmp(argv[1], "ranges") == 0)
    return ranges(std::strtoull(argv[2], nullptr, 10), std::max(1.0, std::atof(argv[3])));
  std::fprintf(stderr,
               "usage: bench_record latency THREADS | latency-full THREADS | flood SECONDS [THREADS [RATE]] | "
               "ranges N RATE\n");
  return 2;
}
