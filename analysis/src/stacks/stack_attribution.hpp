// Which call stack each event is reported under, as torch.profiler's
// with_stack attributes them (autograd/profiler_util.py): an op's own stack;
// an op recorded without one (called from C++ inside another op, or under
// Python attribution where only ops called from Python carry one) takes its
// enclosing op's; an op under a backward function takes the stack of the
// forward op with the backward function's sequence number
// (_set_backward_stacktraces).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ptprof/trace.hpp"

namespace ptprof::stacks {

// torch's text of a Python frame, "path/to/file.py(12): forward"; a native
// frame as "module+0x1234" (symbolised by the caller when it can).
std::string frame_text(const trace::Trace& t, const trace::Frame& f);

// The Python entries of stack `stack` (1 + index into t.stacks; 0: none),
// innermost first, less those torch leaves out (_filter_stack_entry).
std::vector<std::string> stack_entries(const trace::Trace& t, uint32_t stack);

// For every event of `t`: the stack it is reported under (1 + index into
// t.stacks), 0 for none.
std::vector<uint32_t> effective_stacks(const trace::Trace& t);

}  // namespace ptprof::stacks
