// torch's own profiler, started by the program under --profile-memory.
//
// The bridge's memory reporter sits in each thread's PROFILER_STATE slot
// (agent/torch/memory_reporter.hpp), and torch refuses to enable its profiler
// on a thread whose slot is taken ("Profiler is already enabled on this
// thread", both torches). So the agent exports torch's enable entry points
// (same mangled names in torch 1.13 and 2.x, called by libtorch_python from
// another library, so a preloaded definition interposes): each asks the
// bridge to take its reporter off the calling thread, then calls torch's. The
// profiler's disable pops its own state, and the bridge puts the reporter
// back at the thread's next operator. While torch's profiler holds the slot,
// torch reports memory to it and not to ptprof; operators are recorded as
// ever.
#include <dlfcn.h>

#include "base/log.hpp"
#include "base/real_libc.hpp"
#include "base/visibility.hpp"
#include "ptprof/torch_version.hpp"
#include "runtime/runtime.hpp"

// torch's mangled names (checked with nm on Debian's 1.13 and pip's 2.15).
#define PTPROF_TORCH_ENABLE                                                                                         \
  "_ZN5torch8autograd8profiler14enableProfilerERKNS_8profiler4impl14ProfilerConfigERKSt3setINS3_12ActivityTypeESt4" \
  "lessIS8_ESaIS8_EERKSt13unordered_setIN2at11RecordScopeESt4hashISH_ESt8equal_toISH_ESaISH_EE"
#define PTPROF_TORCH_ENABLE_LEGACY \
  "_ZN5torch8autograd8profiler20enableProfilerLegacyERKNS_8profiler4impl14ProfilerConfigE"
#define PTPROF_TORCH_ENABLE_POST                                                                                      \
  "_ZN5torch8autograd8profiler34enableProfilerWithEventPostProcessERKNS_8profiler4impl14ProfilerConfigERKSt3setINS3_" \
  "12ActivityTypeESt4lessIS8_ESaIS8_EEOSt8functionIFvlRSt6vectorINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE" \
  "ESaISM_EESP_EERKSt13unordered_setIN2at11RecordScopeESt4hashISV_ESt8equal_toISV_ESaISV_EE"

namespace ptprof::agent {
namespace {

// torch's definition of `symbol`. Python loads torch's libraries RTLD_LOCAL,
// out of RTLD_NEXT's reach: looked up in the loaded libtorch_cpu itself,
// whose own scope does not hold the agent.
template <class Fn>
Fn next(const char* symbol) {
  for (const auto& t : torch_bridge::loaded_torch_libraries()) {
    void* h = real_dlopen(t.path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (!h) continue;
    void* f = real_dlsym(h, symbol);
    dlclose(h);  // drops the reference RTLD_NOLOAD took; the library stays
    if (f) return reinterpret_cast<Fn>(f);
  }
  if (void* f = real_dlsym(RTLD_NEXT, symbol)) return reinterpret_cast<Fn>(f);
  log(Level::Error, "ptprof: torch's %s not found: torch's profiler was not started", symbol);
  return nullptr;
}

}  // namespace
}  // namespace ptprof::agent

using ptprof::agent::g_runtime;
using ptprof::agent::next;

// The definitions torch's callers bind to (asm labels: the mangled names).
// References are pointers in the Itanium ABI, so every argument passes as
// one. torch's exceptions (c10::Error) pass through to its Python binding.
PTPROF_EXPORT void ptprof_torch_enable_profiler(const void* config, const void* activities,
                                                const void* scopes) __asm__(PTPROF_TORCH_ENABLE);
PTPROF_EXPORT void ptprof_torch_enable_profiler_legacy(const void* config) __asm__(PTPROF_TORCH_ENABLE_LEGACY);
PTPROF_EXPORT void ptprof_torch_enable_profiler_post(const void* config, const void* activities, void* post,
                                                     const void* scopes) __asm__(PTPROF_TORCH_ENABLE_POST);

void ptprof_torch_enable_profiler(const void* config, const void* activities, const void* scopes) {
  g_runtime.torch_profiler_starting();
  static auto fn = next<void (*)(const void*, const void*, const void*)>(PTPROF_TORCH_ENABLE);
  if (fn) fn(config, activities, scopes);
}

void ptprof_torch_enable_profiler_legacy(const void* config) {
  g_runtime.torch_profiler_starting();
  static auto fn = next<void (*)(const void*)>(PTPROF_TORCH_ENABLE_LEGACY);
  if (fn) fn(config);
}

void ptprof_torch_enable_profiler_post(const void* config, const void* activities, void* post, const void* scopes) {
  g_runtime.torch_profiler_starting();
  static auto fn = next<void (*)(const void*, const void*, void*, const void*)>(PTPROF_TORCH_ENABLE_POST);
  if (fn) fn(config, activities, post, scopes);
}
