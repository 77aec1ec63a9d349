// The RecordFunction floor for the overhead benchmark: a global callback that
// does nothing. What torch itself costs per op once any global callback is
// installed; ptprof's cost is measured on top of it.
#include <ATen/record_function.h>

namespace {
std::unique_ptr<at::ObserverContext> noop_start(const at::RecordFunction&) { return nullptr; }
void noop_end(const at::RecordFunction&, at::ObserverContext*) {}
}  // namespace

// The floor as the Performance issue defines it: no ids, no inputs unless asked.
extern "C" __attribute__((visibility("default"))) int ptprof_bench_add_floor_callback(int with_inputs, int with_ids) {
  at::addGlobalCallback(
      at::RecordFunctionCallback(&noop_start, &noop_end).needsInputs(with_inputs != 0).needsIds(with_ids != 0));
  return 0;
}

// Kept for callers of the first version: a floor that asks for ids.
extern "C" __attribute__((visibility("default"))) int ptprof_bench_add_noop_callback(int with_inputs) {
  return ptprof_bench_add_floor_callback(with_inputs, 1);
}
