// Per-operator cost of the profiler's RecordFunction path, in C++ so that
// nothing but the operator and the callbacks is timed: one tiny at::add_out
// per iteration.
//
//   op_cost blocks [CYCLES [OPS]] under `ptprof run --step manual --schedule
//                                 wait=2,active=1`: within one process, each
//                                 cycle's three steps are a block of operators
//                                 with no callback, one with the floor and one
//                                 that ptprof records (its window), each the
//                                 best of 5 x OPS operators; one more cycle
//                                 first, a warm-up (default 150 x 5,000)
//   op_cost none|floor|floor2     run alone: best of several repetitions
//   op_cost tsc                   one read of the TSC, ptprof's clock on
//                                 x86-64 (two per recorded operator)
//
// floor: one do-nothing global callback asking for ids as ptprof's does (what
// any RecordFunction user pays); floor2: two (the second for user scopes).
// Within one process, because across processes the machine's own drift moved
// ptprof / floor by up to 47% between two runs (docs/performance.md).
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

// The agent's C API (agent/include/ptprof.h), there when `ptprof run`
// preloads the agent.
extern "C" {
__attribute__((weak)) void ptprof_step(void);
__attribute__((weak)) int ptprof_recording(void);
}

namespace {

std::unique_ptr<at::ObserverContext> noop_start(const at::RecordFunction&) { return nullptr; }
void noop_end(const at::RecordFunction&, at::ObserverContext*) {}

at::CallbackHandle add_floor() {
  return at::addGlobalCallback(at::RecordFunctionCallback(&noop_start, &noop_end).needsIds(true));
}

// A block: the best of 5 runs of `ops` operators (an interruption lands in
// one run, not in the block's figure).
double block_ns_per_op(const at::Tensor& a, const at::Tensor& b, at::Tensor& c, int ops) {
  constexpr int kRuns = 5;
  double best = 1e30;
  for (int run = 0; run < kRuns; ++run) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < ops; ++i) at::add_out(c, a, b);
    best =
        std::min(best, std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / ops);
  }
  return best;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// One line per cycle ("cycle K none N floor F ptprof P ns/op"), then the
// medians and the median of the cycles' (ptprof - none) / (floor - none).
// Between the two unrecorded blocks the order alternates, so that the block
// right after a window (while the launcher writes its file) is neither's.
int blocks(int cycles, int ops) {
  if (!ptprof_step || !ptprof_recording) {
    std::fprintf(stderr,
                 "op_cost blocks: run it under `ptprof run --step manual --schedule wait=2,active=1 -- "
                 "op_cost blocks N` (the agent's ptprof_step and ptprof_recording are not in this process)\n");
    return 2;
  }
  dlopen(nullptr, RTLD_NOW);  // the agent loads its torch bridge at a dlopen once libtorch is mapped
  at::Tensor a = at::ones({1}), b = at::ones({1}), c = at::empty({1});
  std::vector<double> none, floor, prof, ratio;
  for (int cycle = 0; cycle <= cycles; ++cycle) {
    double got[3] = {0, 0, 0};  // none, floor, ptprof
    int waits = 0, recorded = 0;
    for (int step = 0; step < 3; ++step) {
      if (ptprof_recording() != 0) {
        got[2] = block_ns_per_op(a, b, c, ops);
        ++recorded;
      } else if ((waits++ == 0) == (cycle % 2 == 0)) {
        const at::CallbackHandle h = add_floor();
        got[1] = block_ns_per_op(a, b, c, ops);
        at::removeCallback(h);
      } else {
        got[0] = block_ns_per_op(a, b, c, ops);
      }
      ptprof_step();
    }
    if (recorded != 1 || waits != 2) {
      std::fprintf(stderr,
                   "op_cost blocks: cycle %d had %d recorded steps of 3, not 1: the schedule must be "
                   "wait=2,active=1 (repeat 0) with --step manual\n",
                   cycle, recorded);
      return 1;
    }
    if (cycle == 0) continue;  // the warm-up: names interned, pages touched
    std::printf("cycle %d none %.1f floor %.1f ptprof %.1f ns/op\n", cycle, got[0], got[1], got[2]);
    none.push_back(got[0]);
    floor.push_back(got[1]);
    prof.push_back(got[2]);
    if (got[1] > got[0]) ratio.push_back((got[2] - got[0]) / (got[1] - got[0]));
  }
  std::vector<double> added_floor, added_prof;
  for (size_t i = 0; i < none.size(); ++i) {
    added_floor.push_back(floor[i] - none[i]);
    added_prof.push_back(prof[i] - none[i]);
  }
  std::printf("blocks none %.1f floor %.1f ptprof %.1f ns/op, ratio %.3f, of medians %.3f\n", median(none),
              median(floor), median(prof), median(ratio), median(added_prof) / median(added_floor));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "none";
  if (std::strcmp(mode, "tsc") == 0) {
#if defined(__x86_64__)
    double best = 1e30;
    uint64_t sink = 0;
    for (int rep = 0; rep < 15; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 1000000; ++i) sink += __rdtsc();
      double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / 1e6;
      if (ns < best) best = ns;
    }
    std::printf("tsc %.1f ns/read (%llu)\n", best, static_cast<unsigned long long>(sink & 1));
#else
    std::printf("tsc n/a\n");
#endif
    return 0;
  }
  if (std::strcmp(mode, "blocks") == 0) {
    const int cycles = argc > 2 ? std::atoi(argv[2]) : 150, ops = argc > 3 ? std::atoi(argv[3]) : 5000;
    if (cycles < 1 || ops < 1) {
      std::fprintf(stderr, "op_cost blocks: CYCLES and OPS are whole numbers from 1 (got '%s', '%s')\n",
                   argc > 2 ? argv[2] : "", argc > 3 ? argv[3] : "");
      return 2;
    }
    return blocks(cycles, ops);
  }
  // The agent loads its torch bridge at a dlopen once libtorch is mapped; a
  // program linked to libtorch gets there with any dlopen.
  dlopen(nullptr, RTLD_NOW);
  int callbacks = std::strcmp(mode, "floor") == 0 ? 1 : std::strcmp(mode, "floor2") == 0 ? 2 : 0;
  for (int i = 0; i < callbacks; ++i)
    at::addGlobalCallback(at::RecordFunctionCallback(&noop_start, &noop_end)
                              .needsIds(true)
                              .scopes(i == 0 ? std::unordered_set<at::RecordScope, std::hash<at::RecordScope>>{}
                                             : std::unordered_set<at::RecordScope, std::hash<at::RecordScope>>{
                                                   at::RecordScope::USER_SCOPE}));
  at::Tensor a = at::ones({1}), b = at::ones({1}), c = at::empty({1});
  const int n = 200000;
  double best = 1e30;
  for (int rep = 0; rep < 15; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) at::add_out(c, a, b);
    double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
    if (ns < best) best = ns;
  }
  std::printf("%s %.1f ns/op\n", mode, best);
  return 0;
}
