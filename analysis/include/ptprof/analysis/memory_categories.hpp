// Memory by category (issue #26): parameters, optimizer state, inputs,
// temporaries, activations, gradients, autograd detail, with torch's rules
// (torch/profiler/_memory_profiler.py, MemoryProfile and
// MemoryProfileTimeline), computed from what ptprof recorded: the ops' tensor
// inputs and the modules' and optimizers' tensors (Trace::tensor_groups,
// recorded under --profile-memory with --record-shapes), the allocations and
// frees torch reported, and the op tree.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ptprof/trace.hpp"

namespace ptprof::memory {

// torch's _CATEGORY_TO_INDEX order; Unknown is torch's None (memory that is
// no tensor the profile can name).
enum class Category : uint8_t {
  Parameter = 0,
  OptimizerState,
  Input,
  Temporary,
  Activation,
  Gradient,
  AutogradDetail,
  Unknown,
};
inline constexpr size_t kCategories = 8;
std::string_view category_name(Category c);  // "parameter", "optimizer state", ...

// One device of one process: bytes per category after each change, as
// torch's export_memory_timeline writes [times, sizes] (times in
// microseconds of the trace's clock; pre-existing memory at the first time).
struct CategoryTimeline {
  int32_t pid = 0;
  int8_t device_type = 0;
  int8_t device_index = -1;
  std::vector<int64_t> times_us;
  std::vector<std::array<int64_t, kCategories>> bytes;

  // Bytes per category at time `t_us` (the last change at or before it;
  // zeros before the first).
  std::array<int64_t, kCategories> at(int64_t t_us) const;
};

struct CategoryResult {
  // Empty when categories can be computed; else why not (no tensor identity
  // recorded: the run lacked --profile-memory with --record-shapes).
  std::string unavailable;
  std::vector<CategoryTimeline> timelines;  // by process, then device
};

CategoryResult memory_categories(const trace::Trace& t);

}  // namespace ptprof::memory
