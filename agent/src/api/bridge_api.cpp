// The functions the torch bridge calls (bridge_api.h). The operator path runs
// for every aten op, so it does what the C API does and no more.
#include "ptprof/bridge_api.h"

#include <optional>
#include <span>

#include "base/log.hpp"
#include "base/visibility.hpp"
#include "record/tensor_group.hpp"
#include "record/thread_state.hpp"
#include "runtime/runtime.hpp"
#include "stacks/stack_capture.hpp"

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
  if (t->ops_full()) [[unlikely]] {
    // Deeper than the levels kept: its end could not be matched, so its
    // begin is not written either (one drop for the pair).
    t->ring.count_drop();
    t->push_op({});
    return;
  }
  // The stack first, so that its StackDef precedes the op in the ring and
  // its cost stays out of the op's time.
  uint32_t stack = 0;
  if (const StackMode mode = g_runtime.stack_mode(); mode != StackMode::Off) [[unlikely]] {
    // Attribution: ops called from Python (top level, or inside a user
    // scope); the ops they call inherit it when the trace is read.
    const OpLevel* caller = t->innermost_op();
    if (mode == StackMode::Full || !caller || caller->scope == uint8_t(wire::OpScope::UserScope))
      stack = capture_python_stack(*t, mode, g_runtime.stack_sources());
  }
  uint64_t ts = t->now();
  uint32_t id = t->intern(op->name);
  // Shapes are recorded whenever the bridge passes them, even as zero bytes
  // (an op without inputs prints []); an oversized encoding is left out.
  bool has_shapes = op->shapes != nullptr && op->shapes_bytes <= wire::kMaxOpShapesBytes;
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
  ++t->ops_recorded;
  // While CUPTI records, the kernels this op launches carry its handle. A
  // user scope (record_function) pushes none, as torch.profiler pushes it
  // only as a user correlation: work launched in one is the innermost
  // operator's, as torch.profiler's tables have it.
  const bool push = g_runtime.cuda_correlating() && op->scope != uint8_t(wire::OpScope::UserScope);
  if (push) [[unlikely]]
    g_runtime.cupti().push(op->handle);
  t->push_op({op->handle, push, op->scope});
}

PTPROF_EXPORT void ptprof_agent_op_end(uint64_t handle) {
  ThreadState* t = detail::tls_thread;
  if (!t) return;
  const std::optional<OpLevel> op = t->pop_op(handle);
  if (!op) return;
  if (op->pushed) [[unlikely]]
    g_runtime.cupti().pop();
  t->emit_end(wire::RecordType::OpEnd, t->now(), wire::OpEndPayload{handle});
}

PTPROF_EXPORT void ptprof_agent_op_collective(const ptprof_collective* c) {
  ThreadState* t = detail::tls_thread;
  if (!t || !g_runtime.recording()) return;
  // Only for the op this thread just began: a begin the ring dropped (or an
  // op past the levels kept) leaves nothing to describe.
  const OpLevel* op = t->innermost_op();
  if (!op || op->handle != c->handle || c->handle == 0) return;
  wire::CollectivePayload p{};
  p.handle = c->handle;
  uint8_t fields = 0;
  if (c->seq >= 0) {
    p.seq = c->seq;
    fields |= wire::kCollectiveSeq;
  }
  if (c->group_size > 0) {
    p.group_size = c->group_size;
    fields |= wire::kCollectiveGroupSize;
  }
  if (c->process_group) {
    p.process_group = t->intern(c->process_group);
    p.process_group_desc = c->process_group_desc ? t->intern(c->process_group_desc) : 0;
    fields |= wire::kCollectiveProcessGroup;
  }
  if (c->in_elements >= 0 && c->out_elements >= 0) {
    p.in_elements = c->in_elements;
    p.out_elements = c->out_elements;
    fields |= wire::kCollectiveElementCounts;
  }
  p.rank = c->rank;
  p.dtype = c->dtype ? t->intern(c->dtype) : 0;
  p.fields = fields;
  (void)t->emit(wire::RecordType::Collective, c->name ? t->intern(c->name) : 0, t->now(), p);
}

PTPROF_EXPORT int ptprof_agent_tensor_identity(void) {
  return g_runtime.memory_recording() && g_runtime.record_shapes() ? 1 : 0;
}

PTPROF_EXPORT void ptprof_agent_op_tensors(uint64_t handle, uint8_t group_flags, const ptprof_tensor_ref* refs,
                                           uint32_t count) {
  ThreadState* t = detail::tls_thread;
  if (!t || !g_runtime.memory_recording()) return;
  const OpLevel* op = t->innermost_op();
  if (!op || op->handle != handle || handle == 0) return;
  emit_tensor_group(*t, wire::TensorGroupKind::OpInputs, handle, 0, group_flags, refs, count);
}

PTPROF_EXPORT void ptprof_agent_scope_begin(void) {
  if (ThreadState* t = thread_state()) t->push_scope(g_runtime.current_step());
}

PTPROF_EXPORT void ptprof_agent_scope_end(const char* name) {
  ThreadState* t = thread_state();
  if (!t) return;
  t->pop_scope();
  g_runtime.scope_ended(*t, name);
}

PTPROF_EXPORT int ptprof_agent_step_watches_ops(void) { return g_runtime.config().step.watches_ops() ? 1 : 0; }

PTPROF_EXPORT void ptprof_agent_op_watched_end(const char* name) {
  if (ThreadState* t = thread_state()) g_runtime.op_ended(*t, name);
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
  if (!t || t->calibration || !t->at_top_level()) return 0;
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
