// The public C API (ptprof.h): ranges, marks and steps from user code.
#include <atomic>
#include <optional>

#include "base/visibility.hpp"
#include "ptprof.h"
#include "record/thread_state.hpp"
#include "runtime/runtime.hpp"

using namespace ptprof;
using namespace ptprof::agent;

namespace {
constexpr uint32_t kRecordedBit = 0x8000'0000u;

bool named_step_rule() { return g_runtime.config().step.kind == StepRule::Kind::Named; }
}  // namespace

PTPROF_EXPORT void ptprof_mark(const char* name) {
  ThreadState* t = thread_state();
  if (!t) {
    if (name) g_runtime.note_unrecorded_event();
    return;
  }
  if (!g_runtime.recording() || !name) return;
  t->emit_instant(wire::RecordType::Mark, t->intern(name), t->now());
}

PTPROF_EXPORT void ptprof_range_push(const char* name) {
  ThreadState* t = thread_state();
  if (!t) {
    if (name) g_runtime.note_unrecorded_event();
    return;
  }
  uint32_t entry = 0;
  if (name && (g_runtime.recording() || named_step_rule())) {
    entry = t->intern(name);
    // A pop is written only for a push that was: an unrecorded push (skipped
    // step, full ring, nesting deeper than tracked) must not close some other
    // range. A recorded push holds the room for its pop.
    if (g_runtime.recording()) {
      if (t->ranges_full())
        t->ring.count_drop();
      else if (t->emit_begin(wire::RecordType::RangePush, entry, t->now(), wire::kRangePopBytes))
        entry |= kRecordedBit;
    }
  }
  t->push_range(entry, g_runtime.current_step());
}

PTPROF_EXPORT void ptprof_range_pop(void) {
  // A pop belongs to a push on this thread: no thread state, nothing to close.
  ThreadState* t = detail::tls_thread;
  if (!t || t->busy) return;
  const std::optional<uint32_t> popped = t->pop_range();
  if (!popped) return;
  const uint32_t entry = *popped;
  if (entry & kRecordedBit) t->emit_end(wire::RecordType::RangePop, t->now());
  const char* ended = nullptr;
  if (named_step_rule() && (entry & ~kRecordedBit) && (entry & ~kRecordedBit) == g_runtime.named_step_id())
    ended = g_runtime.config().step.name.c_str();
  g_runtime.scope_ended(*t, ended);
}

PTPROF_EXPORT void ptprof_step(void) { g_runtime.end_step(); }

PTPROF_EXPORT int ptprof_recording(void) {
  const bool on = g_runtime.recording();
  // Pairs with the release store WindowController::apply makes after the
  // bridge is switched: a 1 here means this thread's next operator records.
  std::atomic_thread_fence(std::memory_order_acquire);
  return on ? 1 : 0;
}
