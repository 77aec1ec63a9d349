// libptprof_torch.so: turns RecordFunction callbacks into agent calls
// (bridge_api.h). Global callbacks, each registered only while the agent's
// mode asks for it and removed after (at::removeCallback): torch takes its
// no-callback fast path only when no global callback at all is registered;
// a disabled one, or one for user scopes only, still costs every operator
// (5-25 ns, bench/registered_callbacks.py):
//   (a) ops: every scope; start -> ptprof_agent_op_begin, end -> op_end.
//       One variant per combination of shapes (needsInputs) and memory
//       reporting, the one the window records with; none outside windows.
//       It also watches the user scopes, as (b) does, after the operator's
//       begin and end.
//   (b) the scope watcher: USER_SCOPE only, outside windows when the agent
//       needs the user scopes' ends to end steps (Optimizer.step#...: the
//       Python bootstrap reports those itself). Its start also
//       keeps the thread's profiler state in step with the windows.
//   The two hand the user scopes over while both are registered, through
//   g_scope_owner: a scope is begun by the one that owned the scopes at its
//   start, which alone ends it (its context says so), so none is lost or
//   counted twice.
// The profiler state (memory_reporter.hpp) sits in the PROFILER_STATE slot of
// threads while a window records, memory or not: torch opens the scopes it
// emits only for a profiler (_RecordFunctionFast: compiled graphs' "## Call
// CompiledFxGraph ##", "Pregraph bytecode", the "(dynamo_timed)" scopes...)
// only when that slot holds something. Outside windows it leaves the slot
// (unless memory is profiled, whose allocator bookkeeping needs it always),
// so torch skips those scopes there as without ptprof.
//   (c) only when PTPROF_STEP names an operator: the operators' ends, always
//       on, for the same reason.
// (a) ends a user scope's operator before it reports the scope's end, so the
// operator is written before the step the scope ends is closed.
#include <ATen/record_function.h>
#include <torch/version.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>

#include "calibrate_ops.hpp"
#include "collective_facts.hpp"
#include "encode_inputs.hpp"
#include "fork_guard.hpp"
#include "memory_reporter.hpp"
#include "ptprof/bridge_api.h"
#include "ptprof/record.hpp"
#include "ptprof/torch_version.hpp"
#include "tensor_refs.hpp"
#include "torch_compat.hpp"

namespace ptprof::torch_bridge {
namespace {

// Room for the shapes of one op: what fits in a ring record after the header
// and OpBeginPayload.
constexpr size_t kShapesCapacity = wire::kMaxOpShapesBytes;

// The op callback variants, indexed by variant(shapes, memory).
constexpr int kVariants = 4;
constexpr int variant(bool shapes, bool memory) { return (shapes ? 1 : 0) | (memory ? 2 : 0); }
bool g_registered = false;
// Who begins the user scopes: nobody, the scope watcher (b) or the operator
// callback (a). Changed under g_toggle_mutex while both callbacks concerned
// are registered; read by their starts.
enum class ScopeOwner : int { None, Watcher, Ops };
std::atomic<ScopeOwner> g_scope_owner{ScopeOwner::None};
// The state every thread's PROFILER_STATE slot gets in recording windows.
std::shared_ptr<c10::DebugInfoBase> g_memory_reporter;

// Serialises toggles so the last caller's state wins; `g_enabled` mirrors what
// torch has (the enabled variant, -1: none), so a repeated call costs neither
// torch's mutex nor a cache rebuild in every thread (each real toggle bumps
// torch's callback version).
std::mutex g_toggle_mutex;
int g_enabled = -1;
// torch's handles of what is registered now (valid while the flag is set).
at::CallbackHandle g_op_callback = 0;
bool g_watching = false;
at::CallbackHandle g_watcher = 0;

// The thread's profiler state follows the windows at each user scope (a
// thread that runs no operator in a window still gets it before a compiled
// graph's scope; one whose window ended loses it at its next user scope).
void follow_windows(bool recording) {
  if (recording)
    MemoryReporter::install(g_memory_reporter);
  else if (ptprof_agent_profile_memory() == 0)
    MemoryReporter::step_aside(g_memory_reporter);
}

// What a scope's start returns when it began the scope: its end then ends it.
struct ScopeBegun final : at::ObserverContext {};

// A user scope starts: begun here when `me` owns the scopes (a few per step:
// the allocation is not on the operators' path).
std::unique_ptr<at::ObserverContext> begin_scope(ScopeOwner me) {
  if (g_scope_owner.load(std::memory_order_acquire) != me) return nullptr;
  follow_windows(ptprof_agent_recording() != 0);
  ptprof_agent_scope_begin();
  return std::make_unique<ScopeBegun>();
}

// Kept out of op_start so that the shapes buffer (on the stack: a
// thread_local in a dlopen-ed library costs a __tls_get_addr call, and the
// agent copies the bytes before we return) is only paid for when wanted.
[[gnu::noinline]] void begin_with_shapes(ptprof_op_begin& op, const at::RecordFunction& fn) {
  uint8_t buf[kShapesCapacity];
  op.shapes_bytes = encode_inputs(fn.inputs(), buf, sizeof buf);
  op.shapes = buf;  // non-null even when 0 bytes: "recorded, no inputs" prints []
  ptprof_agent_op_begin(&op);
}

// The hot path: ~1,000 calls per training step. No allocation, no lock.
// kShapes: the variant that asked torch for the inputs. kMemory: the variant
// of windows that profile memory, which first gives a thread that has none
// the profiler state (memory_reporter.hpp): the allocator reports to it only
// from then on. Other threads get it at their user scopes (follow_windows),
// which keeps the other variants' per-op path as it was.
template <bool kShapes, bool kMemory>
std::unique_ptr<at::ObserverContext> op_start(const at::RecordFunction& fn) {
  if constexpr (kMemory) MemoryReporter::install(g_memory_reporter);
  ptprof_op_begin op;
  op.name = op_name(fn);
  op.handle = fn.handle();
  op.seq_nr = fn.seqNr();
  op.fwd_thread_id = fn.forwardThreadId();
  op.scope = wire_scope(fn.scope());
  op.flags = (fn.isAsync() ? wire::kOpAsync : 0) |
             (fn.scope() == at::RecordScope::BACKWARD_FUNCTION ? kBackwardFunctionFlags : 0);
  op.shapes_bytes = 0;
  op.shapes = nullptr;
  // needsInputs() is per RecordFunction: torch boxes inputs if any callback
  // asked, so check our own variant too.
  if (kShapes && fn.needsInputs()) {
    begin_with_shapes(op, fn);
    // Windows that record memory and shapes: the inputs' identity, for the
    // memory categories.
    if (kMemory && ptprof_agent_tensor_identity() != 0) report_tensors(fn);
  } else {
    ptprof_agent_op_begin(&op);
  }
  // A collective's facts follow its op (collective_facts.hpp): one byte
  // compared on every other op.
  if (is_param_comms(op.name)) [[unlikely]]
    report_collective(op.handle);
  if (fn.scope() == at::RecordScope::USER_SCOPE) [[unlikely]]
    return begin_scope(ScopeOwner::Ops);
  return nullptr;
}

// `ctx`: set by begin_scope when this callback began the user scope.
void op_end(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  ptprof_agent_op_end(fn.handle());
  if (ctx != nullptr) [[unlikely]]
    ptprof_agent_scope_end(op_name(fn));
}

std::unique_ptr<at::ObserverContext> watch_start(const at::RecordFunction&) { return begin_scope(ScopeOwner::Watcher); }

void watch_end(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  if (ctx != nullptr) ptprof_agent_scope_end(op_name(fn));
}

// PTPROF_STEP names an operator: every operator's end, whatever the step
// (the user scopes' watcher above never sees operators, and the op
// callbacks are off in skip and wait steps).
std::unique_ptr<at::ObserverContext> watch_op_start(const at::RecordFunction&) { return nullptr; }
void watch_op_end(const at::RecordFunction& fn, at::ObserverContext*) { ptprof_agent_op_watched_end(op_name(fn)); }

constexpr at::RecordFunctionCallback::StartCallback kStarts[kVariants] = {
    &op_start<false, false>, &op_start<true, false>, &op_start<false, true>, &op_start<true, true>};

// needsIds: handles pair begins with ends in the agent (without it torch
// leaves them 0). needsInputs only in the shapes variants: boxing inputs is
// the most expensive thing a callback can ask of torch.
at::CallbackHandle add_op_callback(int v) {
  return at::addGlobalCallback(
      at::RecordFunctionCallback(kStarts[v], &op_end).needsInputs((v & 1) != 0).needsIds(true));
}

// Both under g_toggle_mutex.
void add_watcher() {
  if (g_watching) return;
  g_watcher =
      at::addGlobalCallback(at::RecordFunctionCallback(&watch_start, &watch_end).scopes({at::RecordScope::USER_SCOPE}));
  g_watching = true;
}
void remove_watcher() {
  if (!g_watching) return;
  at::removeCallback(g_watcher);
  g_watching = false;
}

// Safe from inside a RecordFunction end callback (the agent calls it from
// op_end and watch_end): torch holds no lock while running callbacks, a
// RecordFunction runs the end callbacks it captured at its start whatever is
// registered later, and other threads pick the change up at their next
// RecordFunction through an atomic version check (see the report in
// agent/torch/README.md). Switching variants removes the old one before
// adding the new: never two at once, which would record an op twice; the
// watcher holds the user scopes meanwhile.
void set_recording(int mode) {
  std::lock_guard lock(g_toggle_mutex);
  if (!g_registered) return;
  const int want = (mode & PTPROF_BRIDGE_OPS) != 0
                       ? variant((mode & PTPROF_BRIDGE_SHAPES) != 0, (mode & PTPROF_BRIDGE_MEMORY) != 0)
                       : -1;
  // The calling thread (the one ending the step) gets or loses the profiler
  // state at once: the next step's first scope may be a compiled graph's.
  follow_windows(want >= 0);
  if (want != g_enabled) {
    add_watcher();
    g_scope_owner.store(ScopeOwner::Watcher, std::memory_order_release);
    if (g_enabled >= 0) {
      // Tensor identity is wanted only in the memory and shapes variant: the
      // TensorImpls it pinned are let go when that variant stops.
      if (g_enabled == variant(true, true)) impl_pins().clear();
      at::removeCallback(g_op_callback);
    }
    if (want >= 0) g_op_callback = add_op_callback(want);
    g_enabled = want;
  }
  // The new owner is registered before it takes the scopes over; the old one
  // is removed after.
  if (g_enabled >= 0) {
    g_scope_owner.store(ScopeOwner::Ops, std::memory_order_release);
    remove_watcher();
  } else if ((mode & PTPROF_BRIDGE_SCOPES) != 0) {
    add_watcher();
    g_scope_owner.store(ScopeOwner::Watcher, std::memory_order_release);
  } else {
    g_scope_owner.store(ScopeOwner::None, std::memory_order_release);
    remove_watcher();
  }
}

// Until the agent says what it wants (WindowController::install_bridge_switch):
// the user scopes watched, as a step may end at one.
int initial_mode() {
  if (ptprof_agent_recording() == 0) return PTPROF_BRIDGE_SCOPES;
  return PTPROF_BRIDGE_OPS | (ptprof_agent_record_shapes() != 0 ? PTPROF_BRIDGE_SHAPES : 0) |
         (ptprof_agent_profile_memory() != 0 ? PTPROF_BRIDGE_MEMORY : 0);
}

void fill(char* why, uint32_t why_len, const std::string& text) {
  if (!why || !why_len) return;
  std::snprintf(why, why_len, "%s", text.c_str());
}

// Empty when the process's torch matches the one we were compiled against.
std::string version_mismatch() {
  const auto loaded = loaded_torch_libraries();
  const std::string built = std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR);
  if (loaded.empty())
    return "torch bridge built for torch " + built + " found no libtorch_cpu in the process; operator events are off";
  if (loaded.size() > 1) {
    std::string paths;
    for (const auto& t : loaded) paths += (paths.empty() ? "" : ", ") + t.path;
    return "torch bridge built for torch " + built + " but the process has " + std::to_string(loaded.size()) +
           " torch libraries (" + paths + "); operator events are off";
  }
  const auto& t = loaded.front();
  if (t.major < 0)  // unreadable version: trust the ABI check dlopen already did
    return {};
  if (t.major != TORCH_VERSION_MAJOR || t.minor != TORCH_VERSION_MINOR)
    return "torch bridge built for torch " + built + " but the process has torch " + std::to_string(t.major) + "." +
           std::to_string(t.minor) + " (" + t.path + "); operator events are off";
  return {};
}

int init(void (**set_recording_out)(int), char* why, uint32_t why_len) {
  if (g_registered) {  // a second init: hand back the same switch
    if (set_recording_out) *set_recording_out = &set_recording;
    return 0;
  }
  if (auto err = version_mismatch(); !err.empty()) {
    fill(why, why_len, err);
    return 1;
  }

  // RecordFunction is on by default in every thread; a thread where it is off
  // was switched off on purpose (DisableRecordFunctionGuard), so we leave it.
  if (!at::isRecordFunctionEnabled())
    ptprof_agent_warn("RecordFunction is disabled on the thread that loaded torch; its operators are not recorded");

  g_memory_reporter = std::make_shared<MemoryReporter>();
  ForkGuard::install();
  ImplPins::hold_across_fork();
  if (ptprof_agent_profile_memory() != 0)
    MemoryReporter::install(g_memory_reporter);  // the thread that imports torch, before any op
  {
    std::lock_guard lock(g_toggle_mutex);
    g_registered = true;
  }
  // Calibrated on the plain variant (what a default run records), alone, as
  // in a window; then what this step wants.
  set_recording(PTPROF_BRIDGE_OPS);
  at::CallbackHandle plain = 0;
  {
    std::lock_guard lock(g_toggle_mutex);
    plain = g_op_callback;
  }
  calibrate_op_cost(plain);  // not under the mutex: its operators may end a step, which toggles
  set_recording(initial_mode());
  // After the calibration: its operators are ours, not the program's steps.
  if (ptprof_agent_step_watches_ops() != 0)
    at::addGlobalCallback(at::RecordFunctionCallback(&watch_op_start, &watch_op_end)
                              .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
                                       at::RecordScope::TORCHSCRIPT_FUNCTION}));
  if (set_recording_out) *set_recording_out = &set_recording;
  return 0;
}

}  // namespace
}  // namespace ptprof::torch_bridge

extern "C" __attribute__((visibility("default"))) int ptprof_torch_bridge_init(void (**set_recording)(int on),
                                                                               char* why, uint32_t why_len) {
  try {
    return ptprof::torch_bridge::init(set_recording, why, why_len);
  } catch (const std::exception& e) {
    ptprof::torch_bridge::fill(why, why_len, std::string("torch bridge init failed: ") + e.what());
  } catch (...) {
    ptprof::torch_bridge::fill(why, why_len, "torch bridge init failed");
  }
  return 1;
}

// torch's profiler is about to be enabled on the calling thread (the agent's
// wrapper of torch's enableProfiler*): the memory reporter leaves its slot.
extern "C" __attribute__((visibility("default"))) void ptprof_torch_bridge_step_aside() {
  if (ptprof::torch_bridge::g_memory_reporter)
    ptprof::torch_bridge::MemoryReporter::step_aside(ptprof::torch_bridge::g_memory_reporter);
}

// Checked at compile time against the header's typedef, so the two cannot drift.
static_assert(std::is_same_v<decltype(&ptprof_torch_bridge_init), ptprof_torch_bridge_init_fn>);
