// The public C API (ptprof.h): ranges, marks and steps from user code.
#include <cstring>

#include "export.hpp"
#include "ptprof.h"
#include "thread_state.hpp"

using namespace ptprof;
using namespace ptprof::agent;

namespace {
constexpr uint32_t kRecordedBit = 0x8000'0000u;

bool named_step_rule() { return g_runtime.config().step.kind == StepRule::Kind::Named; }
}  // namespace

PTPROF_EXPORT void ptprof_mark(const char* name) {
  ThreadState* t = thread_state();
  if (!t || !g_runtime.recording() || !name) return;
  t->write(wire::RecordType::Mark, t->intern(name), t->now());
}

PTPROF_EXPORT void ptprof_range_push(const char* name) {
  ThreadState* t = thread_state();
  if (!t) return;
  uint32_t entry = 0;
  if (name && (g_runtime.recording() || named_step_rule())) {
    entry = t->intern(name);
    // A pop is written only for a push that was: an unrecorded push (skipped
    // step, full ring) must not close some other range.
    if (g_runtime.recording() && t->emit(wire::RecordType::RangePush, entry, t->now())) entry |= kRecordedBit;
  }
  if (t->range_depth < ThreadState::kMaxDepth) t->ranges[t->range_depth] = entry;
  ++t->range_depth;
  t->scopes.push(g_runtime.current_step());
}

PTPROF_EXPORT void ptprof_range_pop(void) {
  ThreadState* t = thread_state();
  if (!t || t->range_depth == 0) return;
  uint32_t depth = --t->range_depth;
  uint32_t entry = depth < ThreadState::kMaxDepth ? t->ranges[depth] : 0;
  if (entry & kRecordedBit) t->write(wire::RecordType::RangePop, 0, t->now());
  t->scopes.pop();
  const char* ended = nullptr;
  if (named_step_rule() && (entry & ~kRecordedBit) && (entry & ~kRecordedBit) == g_runtime.named_step_id())
    ended = g_runtime.config().step.name.c_str();
  g_runtime.scope_ended(*t, ended);
}

PTPROF_EXPORT void ptprof_step(void) { g_runtime.end_step(); }
