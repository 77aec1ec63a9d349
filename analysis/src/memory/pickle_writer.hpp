// A pickle of plain values (dict with str keys, list, int, str, float, bool,
// None), protocol 4, for PyTorch's memory snapshots (docs/memory.md,
// "Snapshots"). It writes only what both readers of a snapshot accept:
// Python's pickle module and the memory viewer's own JavaScript unpickler
// (torch/utils/viz/MemoryViz.js), which knows protocols 2-4 and a subset of
// opcodes: PROTO, EMPTY_DICT/EMPTY_LIST, MARK, SETITEMS, APPENDS, BININT,
// LONG1, SHORT_BINUNICODE/BINUNICODE, BINFLOAT, NONE, NEWTRUE/NEWFALSE,
// STOP. No memo, no frames (optional in protocol 4), no objects: nothing
// that runs code when loaded.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace ptprof::memory::pickle {

struct Value;
using List = std::vector<Value>;
using Dict = std::vector<std::pair<std::string, Value>>;  // keys in the order written

struct Value {
  std::variant<std::monostate, bool, int64_t, uint64_t, double, std::string, List, Dict> v;
  Value() = default;
  Value(bool b) : v(b) {}
  Value(int i) : v(int64_t(i)) {}
  Value(int64_t i) : v(i) {}
  Value(uint64_t u) : v(u) {}
  Value(double d) : v(d) {}
  Value(const char* s) : v(std::string(s)) {}
  Value(std::string s) : v(std::move(s)) {}
  Value(List l) : v(std::move(l)) {}
  Value(Dict d) : v(std::move(d)) {}
};

// The pickle of `root`, protocol 4, ending with STOP.
std::string dumps(const Value& root);

}  // namespace ptprof::memory::pickle
