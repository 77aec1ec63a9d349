// The native frames of a recorded call stack as a report shows them: named
// from the modules' ELF symbols ("function [module]"), innermost first, up to
// the interpreter (its frames and its callers' say nothing the Python frames
// do not), and without the frames of the recording itself: ptprof's own
// (the torch bridge's callbacks, anything in a libptprof* module) and
// RecordFunction's callback machinery that called them
// (c10::Dispatcher::runRecordFunction, at::RecordFunction::runStartCallbacks
// ...). Those sit innermost on every op's stack, above the op, and are the
// profiler's cost, not the program's: every output that shows native frames
// takes them from here.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ptprof/trace.hpp"
#include "stacks/elf_symbols.hpp"

namespace ptprof::stacks {

// Whether a native frame (its module's path, its demangled function name,
// empty when unknown) belongs to the recording rather than to the program.
bool is_recording_frame(std::string_view module, std::string_view function);

class NativeFrames {
 public:
  // The native frames of stack `stack` (1 + index into t.stacks; 0: none),
  // innermost first, as "function [module]" ("+0x1a2b [module]" when no
  // symbol holds the address), less the recording's and the interpreter's.
  std::vector<std::string> names(const trace::Trace& t, uint32_t stack);

 private:
  ElfSymbols symbols_;
};

}  // namespace ptprof::stacks
