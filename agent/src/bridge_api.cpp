// The functions the torch bridge calls (bridge_api.h). The operator path runs
// for every aten op, so it does what the C API does and no more.
#include "ptprof/bridge_api.h"

#include <cstring>
#include <span>

#include "export.hpp"
#include "log.hpp"
#include "thread_state.hpp"

using namespace ptprof;
using namespace ptprof::agent;

PTPROF_EXPORT int ptprof_agent_recording(void) { return g_runtime.recording() ? 1 : 0; }

PTPROF_EXPORT int ptprof_agent_record_shapes(void) { return g_runtime.record_shapes() ? 1 : 0; }

PTPROF_EXPORT void ptprof_agent_op_begin(const ptprof_op_begin* op) {
  ThreadState* t = thread_state();
  if (!t) {
    if (g_runtime.recording()) g_runtime.note_unrecorded_event();
    return;
  }
  if (!g_runtime.recording() && !t->calibration) return;
  if (t->op_depth >= ThreadState::kMaxDepth) [[unlikely]] {
    // Deeper than the handles kept: its end could not be matched, so its
    // begin is not written either (one drop for the pair).
    t->ring.count_drop();
    ++t->op_depth;
    return;
  }
  // The stack first, so that its StackDef precedes the op in the ring and
  // its cost stays out of the op's time.
  uint32_t stack = 0;
  if (const StackMode mode = g_runtime.stack_mode(); mode != StackMode::Off) [[unlikely]] {
    // Attribution: ops called from Python (top level, or inside a user
    // scope); the ops they call inherit it when the trace is read.
    if (mode == StackMode::Full || t->op_depth == 0 ||
        t->ops_scope[t->op_depth - 1] == uint8_t(wire::OpScope::UserScope))
      stack = capture_python_stack(*t, mode);
  }
  uint64_t ts = t->now();
  uint32_t id = t->intern(op->name);
  // Shapes are recorded whenever the bridge passes them, even as zero bytes
  // (an op without inputs prints []); an oversized encoding is left out.
  bool has_shapes = op->shapes != nullptr && op->shapes_bytes <= wire::kMaxRecordBytes - sizeof(wire::RecordHeader) -
                                                                     sizeof(wire::OpBeginPayload);
  uint32_t shapes = has_shapes ? op->shapes_bytes : 0;
  wire::OpBeginPayload b{};
  b.handle = op->handle;
  b.seq_nr = op->seq_nr;
  b.fwd_thread_id = op->fwd_thread_id;
  b.scope = op->scope;
  b.flags = uint8_t((op->flags & ~wire::kOpHasShapes) | (has_shapes ? wire::kOpHasShapes : 0));
  b.shapes_bytes = uint16_t(shapes);
  b.stack = stack;
  if (!t->emit_begin(wire::RecordType::OpBegin, id, ts, wire::kOpEndBytes, b,
                     std::span<const uint8_t>(op->shapes, shapes))) [[unlikely]]
    return;
  t->ops[t->op_depth] = op->handle;
  // While CUPTI records, the kernels this op launches carry its handle.
  const bool push = g_runtime.cuda_correlating();
  if (push) [[unlikely]]
    g_runtime.cupti().push(op->handle);
  t->ops_pushed[t->op_depth] = push;
  t->ops_scope[t->op_depth] = op->scope;
  ++t->op_depth;
}

PTPROF_EXPORT void ptprof_agent_op_end(uint64_t handle) {
  ThreadState* t = detail::tls_thread;
  if (!t || t->op_depth == 0) return;
  uint32_t depth = t->op_depth < ThreadState::kMaxDepth ? t->op_depth : ThreadState::kMaxDepth;
  // Ends normally come innermost first; look a few levels down for the rare
  // scope that ends out of order.
  for (uint32_t i = depth; i > 0 && depth - i < 4; --i) {
    if (t->ops[i - 1] != handle) continue;
    const bool pushed = t->ops_pushed[i - 1];
    if (i != depth) {
      std::memmove(&t->ops[i - 1], &t->ops[i], (depth - i) * sizeof(uint64_t));
      std::memmove(&t->ops_pushed[i - 1], &t->ops_pushed[i], (depth - i) * sizeof(bool));
      std::memmove(&t->ops_scope[i - 1], &t->ops_scope[i], depth - i);
    }
    --t->op_depth;
    if (pushed) [[unlikely]]
      g_runtime.cupti().pop();
    t->emit_end(wire::RecordType::OpEnd, t->now(), wire::OpEndPayload{handle});
    return;
  }
  if (t->op_depth > ThreadState::kMaxDepth) --t->op_depth;  // an op beyond the tracked depth
}

PTPROF_EXPORT void ptprof_agent_scope_begin(void) {
  if (ThreadState* t = thread_state()) t->scopes.push(g_runtime.current_step());
}

PTPROF_EXPORT void ptprof_agent_scope_end(const char* name) {
  ThreadState* t = thread_state();
  if (!t) return;
  t->scopes.pop();
  g_runtime.scope_ended(*t, name);
}

PTPROF_EXPORT int ptprof_agent_profile_memory(void) { return g_runtime.profile_memory() ? 1 : 0; }

PTPROF_EXPORT int ptprof_agent_memory_recording(void) { return g_runtime.memory_recording() ? 1 : 0; }

PTPROF_EXPORT void ptprof_agent_memory(const ptprof_memory_event* m) {
  ThreadState* t = thread_state();
  if (!t || !g_runtime.memory_recording()) return;
  wire::MemoryEventPayload p{};
  p.ptr = m->ptr;
  p.bytes = m->bytes;
  p.total_allocated = m->total_allocated;
  p.total_reserved = m->total_reserved;
  p.device_type = m->device_type;
  p.device_index = m->device_index;
  (void)t->emit(wire::RecordType::MemoryEvent, 0, t->now(), p);
}

PTPROF_EXPORT int ptprof_agent_calibration_begin(void) {
  ThreadState* t = thread_state();
  if (!t || t->calibration || t->op_depth || t->range_depth) return 0;
  t->calibration = std::make_unique<ThreadState::Calibration>();
  t->calibration->saved = t->ring;
  t->ring = t->calibration->scratch.writer();
  return 1;
}

PTPROF_EXPORT uint32_t ptprof_agent_calibration_rewind(void) {
  ThreadState* t = detail::tls_thread;
  return t && t->calibration ? t->calibration->scratch.rewind() : 0;
}

PTPROF_EXPORT void ptprof_agent_calibration_end(uint32_t op_cost_ps) {
  ThreadState* t = detail::tls_thread;
  if (!t || !t->calibration) return;
  t->ring = t->calibration->saved;
  t->calibration.reset();
  g_runtime.publish_op_cost(op_cost_ps);
}

PTPROF_EXPORT void ptprof_agent_warn(const char* message) {
  if (message) log(Level::Warn, "%s", message);
}
