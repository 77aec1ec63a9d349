// The RecordFunction floor for the overhead benchmark: a global callback that
// does nothing. What torch itself costs per op once any global callback is
// installed; ptprof's cost is measured on top of it.
#include <ATen/record_function.h>

#include <vector>

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

// The floor switched on and off within one process (bench/profiled_steps.py):
// steps with and without it alternate, so the process-to-process noise of a
// shared machine does not enter the difference. Returns torch's handle.
extern "C" __attribute__((visibility("default"))) unsigned long long ptprof_bench_floor_handle(int with_inputs) {
  const at::CallbackHandle h = at::addGlobalCallback(
      at::RecordFunctionCallback(&noop_start, &noop_end).needsInputs(with_inputs != 0).needsIds(false));
  at::disableCallback(h);
  return h;
}

extern "C" __attribute__((visibility("default"))) void ptprof_bench_floor_enable(unsigned long long handle, int on) {
  if (on)
    at::reenableCallback(handle);
  else
    at::disableCallback(handle);
}

// What the torch bridge keeps registered outside its windows
// (agent/torch/bridge.cpp): `variants` operator callbacks, disabled, asking
// for ids (every other one for inputs too), and with `watcher` a USER_SCOPE
// callback, the step watcher. Registered and removed as a set within one
// process (bench/registered_callbacks.py), which measures what torch charges
// for them when nothing records.
namespace {
std::vector<at::CallbackHandle>& bridge_set() {
  static std::vector<at::CallbackHandle> handles;
  return handles;
}
}  // namespace

extern "C" __attribute__((visibility("default"))) void ptprof_bench_add_bridge_set(int variants, int watcher) {
  for (int v = 0; v < variants; ++v) {
    const at::CallbackHandle h = at::addGlobalCallback(
        at::RecordFunctionCallback(&noop_start, &noop_end).needsInputs((v & 1) != 0).needsIds(true));
    at::disableCallback(h);
    bridge_set().push_back(h);
  }
  if (watcher != 0)
    bridge_set().push_back(at::addGlobalCallback(
        at::RecordFunctionCallback(&noop_start, &noop_end).scopes({at::RecordScope::USER_SCOPE})));
}

extern "C" __attribute__((visibility("default"))) void ptprof_bench_remove_bridge_set() {
  for (const at::CallbackHandle h : bridge_set()) at::removeCallback(h);
  bridge_set().clear();
}
