// Per-operator cost of the profiler's RecordFunction path, in C++ so that
// nothing but the operator and the callbacks is timed: one tiny at::add_out
// per iteration, best of several repetitions.
//
//   op_cost none|floor|floor2     run alone
//   op_cost none                  under `ptprof run` (the bridge records)
//   op_cost tsc                   one read of the TSC, ptprof's clock on
//                                 x86-64 (two per recorded operator)
//
// floor: one do-nothing global callback (what any RecordFunction user pays);
// floor2: two (ptprof registers an operator callback and a step watcher).
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace {

std::unique_ptr<at::ObserverContext> noop_start(const at::RecordFunction&) { return nullptr; }
void noop_end(const at::RecordFunction&, at::ObserverContext*) {}

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
