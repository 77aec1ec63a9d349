// Per-step memory of one trace (window): what is live at the end of each
// step, and the growth (leaks) that survives from step to step.
#pragma once
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "ptprof/analysis/memory.hpp"

namespace ptprof::memory::detail {

// One block torch allocated in the trace: when, and when it was freed in the
// same trace (never: kNotFreed).
struct WindowBlock {
  static constexpr int64_t kNotFreed = std::numeric_limits<int64_t>::max();
  int32_t pid = 0;
  int8_t device_type = 0;
  int8_t device_index = -1;
  int64_t alloc_ns = 0;
  int64_t free_ns = kNotFreed;
  int64_t bytes = 0;
  std::string op, shapes, inputs;
  const trace::Event* event = nullptr;  // the allocation, in the trace
};

// (op, shapes, inputs, device type, device index)
using GrowthKey = std::tuple<std::string, std::string, std::string, int8_t, int8_t>;

// Adds the trace's steps, live bytes at each step's end and growth groups
// (merged with earlier traces' under the same key).
void add_step_memory(const trace::Trace& t, const std::vector<WindowBlock>& blocks, Summary& s,
                     std::map<GrowthKey, Growth>& growth);

// The pid of the process of thread `thread` (0 when the trace does not say).
int32_t pid_of(const trace::Trace& t, uint32_t thread);

// The CUDA allocations of `t` that failed for want of memory, where they
// were made; fill_out_of_memory_state adds the memory at each (once the
// timeline is complete and sorted).
void add_out_of_memory(const trace::Trace& t, Summary& s);
void fill_out_of_memory_state(Summary& s);

// The Python stack of the op enclosing `e` on its thread (an allocation made
// inside an op has the op's stack), innermost first; empty without one.
// `stacks`: stacks::effective_stacks(t).
std::vector<std::string> enclosing_stack(const trace::Trace& t, const std::vector<uint32_t>& stacks,
                                         const trace::Event& e);

}  // namespace ptprof::memory::detail
