// What the agent exports to its torch bridge (libptprof_torch.so).
//
// The bridge is a separate library because it links against libtorch; the
// agent loads it with dlopen when libtorch appears in the process and calls
// its `ptprof_torch_bridge_init`. Everything the bridge records goes through
// these functions, so the ring protocol stays private to the agent.
#pragma once
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ptprof_op_begin {   // NOLINT(readability-identifier-naming): a C API
  const char* name;        // RecordFunction name (NUL-terminated)
  uint64_t handle;         // RecordFunction handle, echoed by op_end
  int64_t seq_nr;          // -1 when none
  uint64_t fwd_thread_id;  // 0 when none
  uint8_t scope;           // wire::OpScope
  uint8_t flags;           // wire::OpFlags (kOpHasShapes is set by the agent)
  uint16_t shapes_bytes;   // 0 when no shapes
  const uint8_t* shapes;   // shapes.hpp encoding; null when shapes are not recorded
};

// Nonzero while this thread's operator events are recorded (warmup or active
// step). Cheap: a load of one flag.
int ptprof_agent_recording(void);
// Whether the current (or last) window records shapes: PTPROF_RECORD_SHAPES,
// or the trigger that opened it asked for them.
int ptprof_agent_record_shapes(void);
void ptprof_agent_op_begin(const struct ptprof_op_begin* op);
// Writes the end only if this thread recorded the matching begin.
void ptprof_agent_op_end(uint64_t handle);

// What torch knows of a collective call: its `record_param_comms` scope's
// debug info (c10::DebugInfoKind::PARAM_COMMS_INFO) and inputs. Passed right
// after that scope's op_begin, for the op `handle`; written only if this
// thread recorded that begin. Names are NUL-terminated; null when torch has none.
struct ptprof_collective {         // NOLINT(readability-identifier-naming): a C API
  uint64_t handle;                 // the op's RecordFunction handle
  const char* name;                // "allreduce", "broadcast", ...
  const char* process_group;       // the group's name ("0"); null when torch gives none
  const char* process_group_desc;  // its description ("default_pg"); null when none
  const char* dtype;               // the element type ("Float"); null when none
  int64_t seq;                     // the group's sequence number of this call; -1 when none
  int64_t in_elements;             // -1 when none
  int64_t out_elements;            // -1 when none
  int32_t group_size;              // -1 when none
  int32_t rank;                    // this process's rank in the group; -1 when none
};
void ptprof_agent_op_collective(const struct ptprof_collective* c);
// The identity of an op's tensor inputs (wire::TensorGroupPayload,
// TensorRefRecord), for the memory categories. Passed right after the op's
// op_begin, only while ptprof_agent_tensor_identity() says so; written only if
// this thread recorded that begin.
struct ptprof_tensor_ref {  // NOLINT(readability-identifier-naming): a C API
  uint64_t impl;            // TensorImpl address
  uint64_t storage;         // storage data pointer; 0 = none
  uint64_t nbytes;          // max(size[i] * stride[i]) * element size
  uint16_t index;           // input position
  int8_t device_type;
  int8_t device_index;
  uint8_t flags;  // wire::TensorRefFlags
  uint8_t role;   // wire::TensorRole
};
void ptprof_agent_op_tensors(uint64_t handle, uint8_t group_flags, const struct ptprof_tensor_ref* refs,
                             uint32_t count);
// Nonzero while a window records memory and shapes on this process: the
// tensor identity the memory categories need is wanted.
int ptprof_agent_tensor_identity(void);
// A user scope (RecordScope::USER_SCOPE) began / ended on this thread. The
// agent tracks them so that a step ending inside a scope that began in the
// same step (the Optimizer.step inside a `record_function("train_step")`)
// ends when that scope ends, as torch's prof.step() after it would.
void ptprof_agent_scope_begin(void);
void ptprof_agent_scope_end(const char* name);
// Nonzero when PTPROF_STEP names an operator (aten::embedding): the bridge
// then also watches operators' ends, in every step, and reports each through
// op_watched_end, which ends a step at the one named.
int ptprof_agent_step_watches_ops(void);
void ptprof_agent_op_watched_end(const char* name);
// Logs `message` at warn level (the bridge warns once per condition).
void ptprof_agent_warn(const char* message);

/* Operator cost calibration (agent/src/record/cost_calibration.hpp): between begin
 * (1: the calling thread now records into a private ring, whatever the
 * schedule says; 0: not possible now) and end, the bridge times operators;
 * rewind empties the private ring and returns the operators recorded into
 * it since the last rewind; end restores the thread's ring and publishes the
 * measured cost of one operator in picoseconds. */
int ptprof_agent_calibration_begin(void);
uint32_t ptprof_agent_calibration_rewind(void);
void ptprof_agent_calibration_end(uint32_t op_cost_ps);

// One allocation (bytes > 0) or free (bytes < 0) as torch reports it to a
// profiler (c10::MemoryReportingInfoBase::reportMemoryUsage).
struct ptprof_memory_event {  // NOLINT(readability-identifier-naming): a C API
  uint64_t ptr;
  int64_t bytes;
  int64_t total_allocated;
  int64_t total_reserved;
  int8_t device_type;  // c10::DeviceType
  int8_t device_index;
};
// Whether the current (or last) window profiles memory: PTPROF_PROFILE_MEMORY,
// or the trigger that opened it asked for it.
int ptprof_agent_profile_memory(void);
// Nonzero while memory events are recorded (in a window that profiles
// memory). Cheap: a load of one flag.
int ptprof_agent_memory_recording(void);
// Records `m` on the calling thread.
void ptprof_agent_memory(const struct ptprof_memory_event* m);

// What `set_recording(mode)` asks of the bridge, as bits; 0: no callback at
// all (torch's fast path: any registered global callback, even a disabled one
// or one for user scopes only, costs every operator 5-25 ns). A window's
// options may differ from the last window's (`ptprof trigger
// --record-shapes`), so shapes and memory are switched with the operators,
// never fixed when the bridge loads.
// NOLINTBEGIN(readability-identifier-naming): a C API
enum {
  PTPROF_BRIDGE_OPS = 1,     // operator events (the operator callback also watches the user scopes)
  PTPROF_BRIDGE_SHAPES = 2,  // ... with their input shapes (torch boxes the inputs)
  PTPROF_BRIDGE_MEMORY = 4,  // ... and torch's memory reporting on every thread that runs one
  PTPROF_BRIDGE_SCOPES = 8,  // without OPS: the user scopes' ends (a step may end at one), nothing else
};
// NOLINTEND(readability-identifier-naming)

// The bridge's entry point. `set_recording(mode)` is how the agent switches
// operator callbacks off in skip/wait steps and on again (any thread may call
// it). Returns 0 on success; on failure fills `why` (NUL-terminated).
typedef int (*ptprof_torch_bridge_init_fn)(void (**set_recording)(int mode), char* why, uint32_t why_len);

#ifdef __cplusplus
}
#endif
