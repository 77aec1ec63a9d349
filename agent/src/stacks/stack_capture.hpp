// Call stacks of operators: the Python and native stacks of the thread
// (PTPROF_WITH_STACK) or only the innermost frame of the user's code
// (PTPROF_PYTHON_ATTRIBUTION).
//
// A stack is keyed by its frames' code objects and instruction offsets, read
// through the public frame accessors, and deduplicated per thread: the first
// time a thread sees a stack it writes a StackDef record (file, function and
// line of each frame, names interned in the string arena) ahead of the op
// that uses it; every later op with the same stack carries only its id. Code
// objects are pinned (a reference is kept) once seen, so that an address is
// never reused by another code object and keys stay unique. String work and
// line numbers are paid only for a stack a thread has not seen.
//
// Python is read on the thread that holds the GIL. torch's Python bindings
// release it around the operator they call, so a thread that has a Python
// thread state but does not hold the GIL takes it back for the walk (as
// torch.profiler's with_stack does); a thread that never ran Python (the
// autograd engine's workers) gets no stack.
#pragma once
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "record/thread_state.hpp"
#include "stacks/native_walk_cache.hpp"

namespace ptprof::agent {

class NativeStacks;
class PythonRuntime;

enum class StackMode : uint8_t {
  Off = 0,
  Attribution = 1,  // the innermost frame of the user's code, for top-level ops
  Full = 2,         // the whole Python stack, for every op
};

// A frame as the hot path keys it: the code object and where in it (the
// instruction offset where the interpreter exposes it, else the line); a
// native frame: no code, its return address.
// Trivial (no member initializers), so that arrays of them cost nothing per op.
struct FrameKey {
  const void* code;
  int64_t where;
  bool operator==(const FrameKey&) const = default;
};

// What a thread knows of stacks and code objects. Allocated on the thread's
// first stack; lookups of known stacks allocate nothing.
struct StackCache final : ThreadCache {
  static constexpr uint32_t kMaxFrames = 128;  // innermost Python frames kept; a StackDef must fit a ring record
  static constexpr uint32_t kMaxNative = 64;   // innermost native frames kept
  static constexpr uint32_t kMaxStacks = 1u << 20;
  static constexpr uint32_t kSlots = 1024;     // power of two
  static constexpr uint32_t kCodeSlots = 256;  // power of two

  struct CodeInfo {
    uint32_t file = 0;  // arena ids
    uint32_t function = 0;
    bool user = false;  // the user's code, not the library's (PythonRuntime::user_file)
  };
  struct Slot {
    uint64_t hash = 0;
    uint32_t id = 0;
  };
  struct CodeSlot {
    const void* code = nullptr;
    const CodeInfo* info = nullptr;
  };

  // The interpreter's code (its executable segments): native frames from its
  // first one on are the interpreter's and its callers', left out (a report
  // shows the Python frames there), so walks stop above them.
  bool interpreter_known = false;
  uintptr_t interpreter_begin = 0, interpreter_end = 0;
  // The most native frames a walk needed to reach the interpreter so far on
  // this thread (0: none yet); the next walks go that deep, plus a margin.
  uint32_t native_depth = 0;
  NativeWalkCache walks;  // the native walks this thread has made

  // Attribution's last stack whose innermost frame was the user's (no
  // native frames): that frame and its id. The next op from the same line
  // needs neither the code objects nor the hash table.
  FrameKey last_user_frame{};
  uint32_t last_user_id = 0;

  Slot slots[kSlots] = {};
  CodeSlot code_slots[kCodeSlots] = {};
  std::unordered_map<uint64_t, uint32_t> by_hash;   // stack hash -> id
  std::vector<std::vector<FrameKey>> stacks;        // id - 1 -> its frames
  std::unordered_map<const void*, CodeInfo> codes;  // pinned code objects

  // The id of the stack `keys` (hash `h`), 0 when not defined yet.
  uint32_t find(uint64_t h, const FrameKey* keys, uint32_t n);
  // Remembers `keys` as a new stack; returns its id (0: the table is full).
  uint32_t add(uint64_t h, const FrameKey* keys, uint32_t n);
};

// Where a stack's frames come from: the interpreter, the native unwinder, and
// whether Full stacks take native frames (PTPROF_NATIVE_STACK).
struct StackSources {
  PythonRuntime& python;
  NativeStacks& native;
  bool native_frames;
};

// The stack id (thread-local, 1-based) of the calling thread's Python stack
// for an op about to begin, its StackDef written first when new; 0 when there
// is none (no Python, no frame, a full ring or table).
uint32_t capture_python_stack(ThreadState& t, StackMode mode, const StackSources& from);

}  // namespace ptprof::agent
