// The RecordFunction floor for the overhead benchmark: a global callback that
// does nothing. What torch itself costs per op once any global callback is
// installed; ptprof's cost is measured on top of it.
#include <ATen/record_function.h>

extern "C" __attribute__((visibility("default"))) int ptprof_bench_add_noop_callback(int with_inputs) {
  auto start = [](const at::RecordFunction&) -> std::unique_ptr<at::ObserverContext> { return nullptr; };
  auto end = [](const at::RecordFunction&, at::ObserverContext*) {};
  at::addGlobalCallback(at::RecordFunctionCallback(start, end).needsInputs(with_inputs != 0).needsIds(true));
  return 0;
}
