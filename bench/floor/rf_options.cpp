// What each RecordFunction option ptprof asks of torch costs per operator,
// against the floor (one do-nothing global callback, no ids, no inputs): the
// configurations are installed and removed in turn in one process, round by
// round, one tiny at::add_out per operator, timed in the thread's CPU time
// (the machines are shared; the wall clock counts waits for a core). Each
// line is the median over rounds of (configuration - none) per operator.
//
//   bench_rf_options [ROUNDS]                 torch's side alone
//   ptprof run -- bench_rf_options [ROUNDS]   every line plus ptprof's own
//                                             callback: "none" is then ptprof
//
// The configurations, each adding to the floor what ptprof's bridge
// (agent/torch/bridge.cpp) does: ids (needsIds, torch's handle counter), the
// step watcher (a second callback, USER_SCOPE only), the three disabled
// operator variants, and the reads of the RecordFunction in op_start (name,
// handle, sequence number, forward thread, scope, async flag).
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

namespace {

double thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

// Keeps the reads of the RecordFunction from being optimised away.
volatile uint64_t g_sink = 0;

std::unique_ptr<at::ObserverContext> noop_start(const at::RecordFunction&) { return nullptr; }
void noop_end(const at::RecordFunction&, at::ObserverContext*) {}

std::unique_ptr<at::ObserverContext> reading_start(const at::RecordFunction& fn) {
  g_sink = reinterpret_cast<uintptr_t>(fn.name()) + fn.handle() + uint64_t(fn.seqNr()) + fn.forwardThreadId() +
           uint64_t(fn.scope()) + uint64_t(fn.isAsync());
  return nullptr;
}
void reading_end(const at::RecordFunction& fn, at::ObserverContext*) { g_sink = fn.handle(); }

struct Config {
  const char* name;
  bool callback;
  bool ids;
  bool watcher;
  int disabled;  // extra callbacks registered, then disabled (the bridge's other variants)
  bool reads;
};

constexpr Config kConfigs[] = {
    {"none", false, false, false, 0, false},
    {"floor", true, false, false, 0, false},
    {"floor+ids", true, true, false, 0, false},
    {"floor+watcher", true, false, true, 0, false},
    {"floor+3 disabled", true, false, false, 3, false},
    {"floor+reads", true, false, false, 0, true},
    {"ptprof's options", true, true, true, 3, true},
};

std::vector<at::CallbackHandle> install(const Config& c) {
  std::vector<at::CallbackHandle> handles;
  if (!c.callback) return handles;
  handles.push_back(at::addGlobalCallback(
      at::RecordFunctionCallback(c.reads ? &reading_start : &noop_start, c.reads ? &reading_end : &noop_end)
          .needsIds(c.ids)));
  for (int i = 0; i < c.disabled; ++i) {
    handles.push_back(at::addGlobalCallback(at::RecordFunctionCallback(&noop_start, &noop_end).needsIds(true)));
    at::disableCallback(handles.back());
  }
  if (c.watcher)
    handles.push_back(at::addGlobalCallback(
        at::RecordFunctionCallback(&noop_start, &noop_end).scopes({at::RecordScope::USER_SCOPE})));
  return handles;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 15;
  // Under `ptprof run` the agent loads its torch bridge at a dlopen once
  // libtorch is mapped; a program linked to libtorch gets there with any.
  dlopen(nullptr, RTLD_NOW);
  constexpr int kOps = 30000;
  constexpr size_t kN = std::size(kConfigs);
  at::Tensor a = at::ones({1}), b = at::ones({1}), c = at::empty({1});
  std::vector<std::vector<double>> per_op(kN);
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < kN; ++k) {
      const auto handles = install(kConfigs[k]);
      for (int i = 0; i < 1000; ++i) at::add_out(c, a, b);  // each thread rebuilds its callback cache here
      double best = 1e30;
      for (int rep = 0; rep < 3; ++rep) {
        const double t0 = thread_cpu_ns();
        for (int i = 0; i < kOps; ++i) at::add_out(c, a, b);
        best = std::min(best, (thread_cpu_ns() - t0) / kOps);
      }
      per_op[k].push_back(best);
      for (auto h : handles) at::removeCallback(h);
    }
  }
  std::printf("%d rounds, ns per operator in thread CPU time\n%-18s %9s %12s\n", rounds, "config", "per op",
              "over none");
  for (size_t k = 0; k < kN; ++k) {
    std::vector<double> diff;
    for (int r = 0; r < rounds; ++r) diff.push_back(per_op[k][size_t(r)] - per_op[0][size_t(r)]);
    std::printf("%-18s %9.1f %12.1f\n", kConfigs[k].name, median(per_op[k]), median(diff));
  }
  return 0;
}
