#include "record/cost_calibration.hpp"

#include <algorithm>

#include "record/thread_state.hpp"

namespace ptprof::agent {

uint32_t calibrate_record_cost_ps(clock::Kind clock) {
  constexpr int kRecords = 2048, kRounds = 7;
  ScratchRing scratch;
  auto t = std::make_unique<ThreadState>();
  t->ring = scratch.writer();
  t->clock = clock;
  // What ptprof_mark does once the thread has its state: the name's id from
  // the thread's cache, a clock read, a record. The name is put in the cache
  // by hand: interned, it would take room in the program's string arena.
  static constexpr char kName[] = "ptprof: calibration";
  t->cache[(reinterpret_cast<uintptr_t>(kName) >> 4) & (ThreadState::kCacheSize - 1)] =
      ThreadState::CacheEntry{kName, kName, 1};
  uint64_t best = UINT64_MAX;
  for (int round = 0; round < kRounds; ++round) {
    scratch.rewind();
    const uint64_t start = clock::monotonic_ns();
    for (int i = 0; i < kRecords; ++i) t->emit_instant(wire::RecordType::Mark, t->intern(kName), t->now());
    best = std::min(best, clock::monotonic_ns() - start);
  }
  return uint32_t(std::min<uint64_t>(best * 1000 / kRecords, UINT32_MAX));
}

}  // namespace ptprof::agent
