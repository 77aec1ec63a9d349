#include "stack_capture.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <span>

#include "python_api.hpp"
#include "thread_state.hpp"

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
uint32_t intern_attr(const PythonApi& py, Object* code, const char* attr, bool* user) {
  Object* s = py.get_attr(code, attr);
  if (!s) return 0;
  uint32_t id = 0;
  if (const char* text = py.utf8(s)) {
    const char* copy = nullptr;
    id = g_runtime.intern(text, &copy);
    if (user) *user = g_runtime.python().user_file(text);
  }
  py.decref(s);
  return id;
}

// What the thread knows of `code`; the first sight pins it and names it.
const StackCache::CodeInfo& code_info(const PythonApi& py, StackCache& c, Object* code) {
  StackCache::CodeSlot& slot = c.code_slots[(reinterpret_cast<uintptr_t>(code) >> 4) & (StackCache::kCodeSlots - 1)];
  if (slot.code == code) [[likely]]
    return *slot.info;
  auto [it, inserted] = c.codes.try_emplace(code);
  if (inserted) {
    py.incref(code);  // pinned: its address is never another code object's
    ErrorScope errors(py);
    it->second.file = intern_attr(py, code, "co_filename", &it->second.user);
    it->second.function = intern_attr(py, code, "co_name", nullptr);
  }
  slot = {code, &it->second};
  return it->second;
}

int64_t where(const PythonApi& py, Object* frame) {
  return py.frame_lasti ? py.frame_lasti(frame) : py.frame_line(frame);
}

// Writes the StackDef of a new stack: file, function and line of each
// Python frame, then module and offset of each native one.
bool define(ThreadState& t, const PythonApi* py, StackCache& c, uint32_t id, Object* const* frames, uint32_t n,
            const uintptr_t* native, uint32_t n_native) {
  static_assert(sizeof(wire::PythonFrameRecord) == sizeof(wire::NativeFrameRecord));
  union Record {
    wire::PythonFrameRecord python;
    wire::NativeFrameRecord native;
  };
  Record out[StackCache::kMaxFrames + StackCache::kMaxNative];
  for (uint32_t i = 0; i < n; ++i) {
    Object* code = py->frame_code(frames[i]);
    const StackCache::CodeInfo& info = code_info(*py, c, code);
    py->decref(code);
    out[i].python =
        wire::PythonFrameRecord{info.file, info.function, uint32_t(std::max(0, py->frame_line(frames[i]))), 0};
  }
  uint32_t kept = 0;
  for (uint32_t i = 0; i < n_native; ++i) {
    uint32_t module = 0;
    uint64_t offset = 0;
    // A return address follows its call: the call's own address names it.
    if (g_runtime.native().locate(native[i] - 1, &module, &offset))
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

uint32_t capture_python_stack(ThreadState& t, StackMode mode) {
  // Native frames first, without the GIL.
  uintptr_t native[StackCache::kMaxNative];
  const uint32_t n_native = mode == StackMode::Full && g_runtime.native_stack()
                                ? g_runtime.native().capture(native, StackCache::kMaxNative)
                                : 0;
  const PythonApi* py = g_runtime.python().api();
  // No Python, a thread that never ran it, or an interpreter going away.
  const bool python = py && py->this_thread_state() && !(py->is_finalizing && py->is_finalizing());
  if (!python && n_native == 0) return 0;
  if (!t.stacks) [[unlikely]]
    t.stacks = std::make_unique<StackCache>();
  StackCache& c = *t.stacks;

  std::optional<GilHold> gil;
  if (python) gil.emplace(*py);
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
  // The frames of the walk after the first are new references: each is
  // released once its caller is taken (the caller stays alive: it is running).
  Object* f = python ? py->current_frame() : nullptr;
  Object* owned = nullptr;
  Object* chosen = nullptr;
  while (f && n < StackCache::kMaxFrames) {
    Object* code = py->frame_code(f);
    const StackCache::CodeInfo& info = code_info(*py, c, code);
    py->decref(code);
    if (mode == StackMode::Attribution) {
      if (!chosen) chosen = f;  // the innermost frame, when no frame is the user's
      if (info.user) {
        chosen = f;
        break;
      }
    } else {
      frames[n] = f;
      keys[n] = FrameKey{code, where(*py, f)};
      h = mix(h, keys[n]);
      ++n;
    }
    Object* back = py->frame_back(f);
    if (owned) py->decref(owned);
    owned = f = back;
  }
  if (mode == StackMode::Attribution && chosen) {
    Object* code = py->frame_code(chosen);
    py->decref(code);
    frames[0] = chosen;
    keys[0] = FrameKey{code, where(*py, chosen)};
    h = mix(h, keys[0]);
    n = 1;
  }
  for (uint32_t i = 0; i < n_native; ++i) {
    keys[n + i] = FrameKey{nullptr, int64_t(native[i])};
    h = mix(h, keys[n + i]);
  }
  const uint32_t total = n + n_native;
  uint32_t id = total ? c.find(h, keys, total) : 0;
  if (total && !id) {
    id = c.add(h, keys, total);
    if (id && !define(t, py, c, id, frames, n, native, n_native)) {
      // Not in the ring (full): forget it, so that the next op defines it.
      c.stacks.pop_back();
      c.by_hash.erase(h);
      c.slots[h & (StackCache::kSlots - 1)] = {};
      id = 0;
    }
  }
  // `chosen` may be `owned`: released only now.
  if (owned) py->decref(owned);
  return id;
}

}  // namespace ptprof::agent
