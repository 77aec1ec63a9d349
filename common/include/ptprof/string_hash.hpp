// The one hash of the maps keyed by std::string and looked up by
// std::string_view: transparent, so that a lookup builds no std::string (the
// trace writer's string table, the report's rows, the agent's interned names).
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace ptprof {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

// A map from strings found by std::string_view as well as by std::string.
template <class Value>
using StringMap = std::unordered_map<std::string, Value, StringHash, std::equal_to<>>;

}  // namespace ptprof
