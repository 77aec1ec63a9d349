#include "stacks/native_frames.hpp"

#include <array>
#include <cstddef>
#include <cstdio>

namespace ptprof::stacks {
namespace {

std::string_view basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The interpreter's own frames end the native part of a stack: above them
// the Python frames say where the program was.
bool is_interpreter(std::string_view module) {
  const std::string_view base = basename(module);
  return base.starts_with("python") || base.starts_with("libpython");
}

// RecordFunction's machinery between an op's dispatch and the callbacks it
// runs (torch 1.13 and 2.x): at::RecordFunction::before/end run the start
// and end callbacks (runStartCallbacks, runEndCallbacks, the callback
// managers in an anonymous namespace), c10::Dispatcher::runRecordFunction
// makes the RecordFunction of a dispatched op. Matched as parts of the
// demangled name, which carries template arguments and namespaces.
constexpr std::array<std::string_view, 8> kCallbackMachinery = {
    "c10::Dispatcher::runRecordFunction",
    "at::RecordFunction::runStartCallbacks",
    "at::RecordFunction::runEndCallbacks",
    "at::RecordFunction::before",
    "at::RecordFunction::end",
    "CallbackManager::",
    "at::RecordFunctionCallback::",
    "::tryRunCallback<",
};

}  // namespace

bool is_recording_frame(std::string_view module, std::string_view function) {
  if (basename(module).starts_with("libptprof")) return true;  // the agent, the torch bridges
  if (function.starts_with("ptprof::") || function.starts_with("ptprof_")) return true;
  for (std::string_view part : kCallbackMachinery)
    if (function.find(part) != std::string_view::npos) return true;
  return false;
}

std::vector<std::string> NativeFrames::names(const trace::Trace& t, uint32_t stack) {
  std::vector<std::string> out;
  if (stack == 0 || stack > t.stacks.size()) return out;
  // The recording's frames are the innermost ones (the callbacks of the op
  // being recorded; an op's callbacks have returned before it runs anything
  // else): everything inward of the outermost of them is cut, so that a
  // frame of the machinery this list does not know, between two it does,
  // goes too.
  size_t cut = 0;
  for (uint32_t f : t.stacks[stack - 1].frames) {
    if (f >= t.frames.size()) continue;
    const trace::Frame& fr = t.frames[f];
    if (fr.kind != trace::FrameKind::Native) continue;
    const std::string& module = fr.file < t.strings.size() ? t.strings[fr.file] : t.strings[0];
    if (is_interpreter(module)) break;  // innermost first: the rest is the interpreter's and its callers'
    std::string name = symbols_.lookup(module, fr.offset);
    if (is_recording_frame(module, name)) cut = out.size() + 1;
    if (name.empty()) {
      char offset[32];
      std::snprintf(offset, sizeof offset, "+0x%llx", static_cast<unsigned long long>(fr.offset));
      name = offset;
    }
    out.push_back(name + " [" + std::string(basename(module)) + "]");
  }
  out.erase(out.begin(), out.begin() + std::ptrdiff_t(cut));
  return out;
}

}  // namespace ptprof::stacks
