#include "stacks/stack_capture.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <span>

#include "base/log.hpp"
#include "cpython/python_api.hpp"
#include "record/services.hpp"
#include "stacks/native_stack.hpp"

namespace ptprof::agent {
namespace {

using Object = PythonApi::Object;

uint64_t mix(uint64_t h, const FrameKey& k) {
  h ^= reinterpret_cast<uintptr_t>(k.code) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h = (h ^ uint64_t(k.where)) * 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 31);
}

// Holds the GIL for the walk: taken back when the thread released it (torch's
// bindings do around every operator), left alone when the thread holds it.
class GilHold {
 public:
  explicit GilHold(const PythonApi& py) : py_(py), held_(py.gil_check() != 0) {
    if (!held_) state_ = py_.gil_ensure();
  }
  ~GilHold() {
    if (!held_) py_.gil_release(state_);
  }
  GilHold(const GilHold&) = delete;
  GilHold& operator=(const GilHold&) = delete;

 private:
  const PythonApi& py_;
  bool held_;
  int state_ = 0;
};

// Keeps the thread's pending exception (if any) out of the way of the calls
// that may fail (attribute lookups, an import) and puts it back.
class ErrorScope {
 public:
  explicit ErrorScope(const PythonApi& py) : py_(py) { py_.err_fetch(&type_, &value_, &tb_); }
  ~ErrorScope() { py_.err_restore(type_, value_, tb_); }  // drops any error raised since
  ErrorScope(const ErrorScope&) = delete;
  ErrorScope& operator=(const ErrorScope&) = delete;

 private:
  const PythonApi& py_;
  Object* type_ = nullptr;
  Object* value_ = nullptr;
  Object* tb_ = nullptr;
};

// The text of `code`.`attr` interned in the arena (0 when unavailable).
uint32_t intern_attr(const PythonApi& py, PythonRuntime& python, Object* code, const char* attr, bool* user) {
  Object* s = py.get_attr(code, attr);
  if (!s) return 0;
  uint32_t id = 0;
  if (const char* text = py.utf8(s)) {
    const char* copy = nullptr;
    id = intern_name(text, &copy);
    if (user) *user = python.user_file(text);
  }
  py.decref(s);
  return id;
}

// What the thread knows of `code`; the first sight pins it and names it.
const StackCache::CodeInfo& code_info(const PythonApi& py, PythonRuntime& python, StackCache& c, Object* code) {
  StackCache::CodeSlot& slot = c.code_slots[(reinterpret_cast<uintptr_t>(code) >> 4) & (StackCache::kCodeSlots - 1)];
  if (slot.code == code) [[likely]]
    return *slot.info;
  auto [it, inserted] = c.codes.try_emplace(code);
  if (inserted) {
    py.incref(code);  // pinned: its address is never another code object's
    ErrorScope errors(py);
    it->second.file = intern_attr(py, python, code, "co_filename", &it->second.user);
    it->second.function = intern_attr(py, python, code, "co_name", nullptr);
  }
  slot = {code, &it->second};
  return it->second;
}

int64_t where(const PythonApi& py, Object* frame) {
  return py.frame_lasti ? py.frame_lasti(frame) : py.frame_line(frame);
}

// Writes the StackDef of a new stack: file, function and line of each
// Python frame, then module and offset of each native one.
bool define(ThreadState& t, const StackSources& from, const PythonApi* py, StackCache& c, uint32_t id,
            Object* const* frames, uint32_t n, const uintptr_t* native, uint32_t n_native) {
  static_assert(sizeof(wire::PythonFrameRecord) == sizeof(wire::NativeFrameRecord));
  union Record {
    wire::PythonFrameRecord python;
    wire::NativeFrameRecord native;
  };
  Record out[StackCache::kMaxFrames + StackCache::kMaxNative];
  for (uint32_t i = 0; i < n; ++i) {
    Object* code = py->frame_code(frames[i]);
    const StackCache::CodeInfo& info = code_info(*py, from.python, c, code);
    py->decref(code);
    out[i].python =
        wire::PythonFrameRecord{info.file, info.function, uint32_t(std::max(0, py->frame_line(frames[i]))), 0};
  }
  uint32_t kept = 0;
  for (uint32_t i = 0; i < n_native; ++i) {
    uint32_t module = 0;
    uint64_t offset = 0;
    // A return address follows its call: the call's own address names it.
    if (from.native.locate(native[i] - 1, &module, &offset))
      out[n + kept++].native = wire::NativeFrameRecord{module, 0, offset};
  }
  wire::StackDefPayload p{uint16_t(n), uint16_t(kept), 0};
  return t.emit(wire::RecordType::StackDef, id, t.now(), p,
                std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(out), (n + kept) * sizeof out[0]));
}

}  // namespace

uint32_t StackCache::find(uint64_t h, const FrameKey* keys, uint32_t n) {
  Slot& s = slots[h & (kSlots - 1)];
  uint32_t id = s.hash == h ? s.id : 0;
  if (!id) {
    auto it = by_hash.find(h);
    if (it == by_hash.end()) return 0;
    id = it->second;
  }
  const std::vector<FrameKey>& k = stacks[id - 1];
  if (k.size() != n || !std::equal(k.begin(), k.end(), keys)) return 0;  // a hash collision: defined anew
  s = Slot{h, id};
  return id;
}

uint32_t StackCache::add(uint64_t h, const FrameKey* keys, uint32_t n) {
  if (stacks.size() >= kMaxStacks) return 0;
  stacks.emplace_back(keys, keys + n);
  const auto id = uint32_t(stacks.size());
  by_hash[h] = id;
  slots[h & (kSlots - 1)] = Slot{h, id};
  return id;
}

namespace {

// What the thread knows of `code` (no Python call: safe without the GIL),
// null when it has not seen it.
const StackCache::CodeInfo* known_code(StackCache& c, const void* code) {
  StackCache::CodeSlot& slot = c.code_slots[(reinterpret_cast<uintptr_t>(code) >> 4) & (StackCache::kCodeSlots - 1)];
  if (slot.code == code) [[likely]]
    return slot.info;
  auto it = c.codes.find(code);
  if (it == c.codes.end()) return nullptr;
  slot = {code, &it->second};
  return &it->second;
}

// One odd multiplier per native frame's position (splitmix64's outputs).
constexpr std::array<uint64_t, StackCache::kMaxNative> kNativeMultipliers = [] {
  std::array<uint64_t, StackCache::kMaxNative> m{};
  uint64_t x = 0;
  for (uint64_t& k : m) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    k = (z ^ (z >> 31)) | 1;
  }
  return m;
}();

// The native frames are hashed as a sum of independent products, then mixed
// in once: a chain of mix() per frame cost ~60 ns an op (30 frames of
// dependent multiplies), more than the remembered walk itself.
uint32_t add_native(FrameKey* keys, uint32_t n, uint64_t& h, const uintptr_t* native, uint32_t n_native) {
  uint64_t sum = n_native;
  for (uint32_t i = 0; i < n_native; ++i) {
    keys[n + i] = FrameKey{nullptr, int64_t(native[i])};
    sum += native[i] * kNativeMultipliers[i];
  }
  if (n_native) h = mix(h, FrameKey{nullptr, int64_t(sum)});
  return n + n_native;
}

// The native frames between the op and the interpreter (all of them on a
// thread that runs no Python), innermost first. The frames from the
// interpreter on are as many again as those above it, and a report leaves
// them out; unw_backtrace cannot stop at them, so the walk is bounded by the
// depth this thread needed so far, and walked again in full when the bound
// hid the interpreter.
uint32_t capture_native(StackCache& c, NativeStacks& stacks, const PythonApi* py, uintptr_t* out) {
  if (!c.interpreter_known) {
    c.interpreter_known = true;
    if (py) stacks.segments(reinterpret_cast<uintptr_t>(py->is_initialized), &c.interpreter_begin, &c.interpreter_end);
  }
  const auto interpreter_at = [&c, out](uint32_t n) {
    uint32_t i = 0;
    while (i < n && (out[i] < c.interpreter_begin || out[i] >= c.interpreter_end)) ++i;
    return i;
  };
  constexpr uint32_t kMargin = 4;
  const uint32_t bound =
      c.native_depth ? std::min(StackCache::kMaxNative, c.native_depth + kMargin) : StackCache::kMaxNative;
  uint32_t n = stacks.capture(out, bound, c.walks, c.interpreter_begin, c.interpreter_end);
  uint32_t at = interpreter_at(n);
  if (at == n && n == bound && bound < StackCache::kMaxNative) {
    n = stacks.capture(out, StackCache::kMaxNative, c.walks, c.interpreter_begin, c.interpreter_end);
    at = interpreter_at(n);
  }
  if (at == n) return n;  // no interpreter on this stack
  c.native_depth = std::max(c.native_depth, at + 1);
  return at;
}

FrameKey key_of(const RawFrame& f) { return FrameKey{f.code, int64_t(reinterpret_cast<uintptr_t>(f.instr))}; }

// The id of a stack the thread has seen, from the frames of `thread` read
// through the layout without the GIL: 0 for no stack at all, nullopt when it
// must be defined (or when, for Attribution, a code object is new: whether
// it is the user's is not known). Attribution reads frames only up to the
// user's.
std::optional<uint32_t> known_stack(StackCache& c, StackMode mode, const PythonApi& py, const Object* thread,
                                    const uintptr_t* native, uint32_t n_native) {
  FrameKey keys[StackCache::kMaxFrames + StackCache::kMaxNative];
  uint64_t h = uint64_t(mode);
  uint32_t n = 0;
  FrameCursor f(*py.layout, thread);
  bool innermost_user = false;
  if (mode == StackMode::Attribution) {
    if (f) {
      RawFrame chosen = *f;  // the innermost frame, when no frame is the user's
      // A loop's ops repeat the last stack: same innermost frame, the user's.
      if (n_native == 0 && c.last_user_id != 0 && key_of(chosen) == c.last_user_frame) return c.last_user_id;
      for (uint32_t depth = 0; f && depth < StackCache::kMaxFrames; ++f, ++depth) {
        const RawFrame frame = *f;
        const StackCache::CodeInfo* info = known_code(c, frame.code);
        if (!info) return std::nullopt;
        if (info->user) {
          chosen = frame;
          innermost_user = depth == 0;
          break;
        }
      }
      keys[0] = key_of(chosen);
      h = mix(h, keys[0]);
      n = 1;
    }
  } else {
    for (; f && n < StackCache::kMaxFrames; ++f, ++n) {
      keys[n] = key_of(*f);
      h = mix(h, keys[n]);
    }
  }
  const uint32_t total = add_native(keys, n, h, native, n_native);
  if (total == 0) return 0;
  if (const uint32_t id = c.find(h, keys, total)) {
    if (innermost_user && n_native == 0) {
      c.last_user_frame = keys[0];
      c.last_user_id = id;
    }
    return id;
  }
  return std::nullopt;
}

// Walks the Python stack through the public API with the GIL, and defines
// the stack when the thread has not seen it. With `raw` (the same frames read
// through the layout), keys are those known_stack() makes, and the two walks
// are checked to agree.
uint32_t walk_and_define(ThreadState& t, const StackSources& from, StackCache& c, StackMode mode, const PythonApi* py,
                         const RawFrame* raw, uint32_t n_raw, const uintptr_t* native, uint32_t n_native) {
  std::optional<GilHold> gil;
  if (py) gil.emplace(*py);
  // Nothing the interpreter does for us here is recorded.
  struct Busy {
    ThreadState& t;
    bool was = t.busy;
    explicit Busy(ThreadState& s) : t(s) { t.busy = true; }
    ~Busy() { t.busy = was; }
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;
  } busy(t);
  Object* frames[StackCache::kMaxFrames];
  FrameKey keys[StackCache::kMaxFrames + StackCache::kMaxNative];
  uint32_t n = 0;
  uint64_t h = uint64_t(mode);
  bool agree = true;
  // The frames of the walk after the first are new references: each is
  // released once its caller is taken (the caller stays alive: it is running).
  Object* f = py ? py->current_frame() : nullptr;
  Object* owned = nullptr;
  Object* chosen = nullptr;
  uint32_t depth = 0, chosen_depth = 0;
  for (; f && depth < StackCache::kMaxFrames; ++depth) {
    Object* code = py->frame_code(f);
    const StackCache::CodeInfo& info = code_info(*py, from.python, c, code);
    py->decref(code);
    if (raw && (depth >= n_raw || raw[depth].code != code)) agree = false;
    const int64_t at = raw && depth < n_raw ? key_of(raw[depth]).where : where(*py, f);
    if (mode == StackMode::Attribution) {
      if (!chosen) chosen = f;  // the innermost frame, when no frame is the user's
      if (info.user) {
        chosen = f;
        chosen_depth = depth;
        break;
      }
    } else {
      frames[n] = f;
      keys[n] = FrameKey{code, at};
      h = mix(h, keys[n]);
      ++n;
    }
    Object* back = py->frame_back(f);
    if (owned) py->decref(owned);
    owned = f = back;
  }
  if (raw && !f && depth != n_raw) agree = false;  // the whole stack walked: as deep as the layout's
  if (mode == StackMode::Attribution && chosen) {
    Object* code = py->frame_code(chosen);
    py->decref(code);
    frames[0] = chosen;
    keys[0] = FrameKey{code, raw && chosen_depth < n_raw ? key_of(raw[chosen_depth]).where : where(*py, chosen)};
    h = mix(h, keys[0]);
    n = 1;
  }
  uint32_t id = 0;
  if (!agree) {
    // The layout does not describe this interpreter: walk with the GIL from
    // now on. This op goes without a stack (its keys were the layout's).
    if (from.python.distrust_layout())
      log(Level::Info,
          "python: CPython 3.11's layout disagreed with the public C API: frames read with the GIL from now on");
  } else if (const uint32_t total = add_native(keys, n, h, native, n_native)) {
    id = c.find(h, keys, total);
    if (!id) {
      id = c.add(h, keys, total);
      if (id && !define(t, from, py, c, id, frames, n, native, n_native)) {
        // Not in the ring (full): forget it, so that the next op defines it.
        c.stacks.pop_back();
        c.by_hash.erase(h);
        c.slots[h & (StackCache::kSlots - 1)] = {};
        id = 0;
      }
    }
  }
  // `chosen` may be `owned`: released only now.
  if (owned) py->decref(owned);
  return id;
}

}  // namespace

uint32_t capture_python_stack(ThreadState& t, StackMode mode, const StackSources& from) {
  const PythonApi* py = from.python.api();
  // No Python, a thread that never ran it, or an interpreter going away.
  Object* thread = py ? py->this_thread_state() : nullptr;
  const bool python = thread && !(py->is_finalizing && py->is_finalizing());
  const bool with_native = mode == StackMode::Full && from.native_frames;
  if (!python && !with_native) return 0;
  if (!t.stacks) [[unlikely]]
    t.stacks = std::make_unique<StackCache>();
  // Only this function makes a thread's cache: a StackCache.
  StackCache& c = static_cast<StackCache&>(*t.stacks);
  // Native frames first, without the GIL.
  uintptr_t native[StackCache::kMaxNative];
  const uint32_t n_native = with_native ? capture_native(c, from.native, py, native) : 0;
  if (!python && n_native == 0) return 0;

  if (python && py->layout && from.python.raw_frames()) [[likely]] {
    // A stack the thread has seen costs no GIL; a thread with no Python
    // frame (the autograd engine's) never takes it.
    if (std::optional<uint32_t> id = known_stack(c, mode, *py, thread, native, n_native)) return *id;
    RawFrame raw[StackCache::kMaxFrames];
    const uint32_t n_raw = py->read_frames(thread, raw, StackCache::kMaxFrames);
    return walk_and_define(t, from, c, mode, n_raw ? py : nullptr, raw, n_raw, native, n_native);
  }
  return walk_and_define(t, from, c, mode, python ? py : nullptr, nullptr, 0, native, n_native);
}

}  // namespace ptprof::agent
