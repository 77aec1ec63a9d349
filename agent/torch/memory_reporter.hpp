// PTPROF_PROFILE_MEMORY: torch's own memory reporting to profilers, taken as
// torch.profiler(profile_memory=True) takes it. Also the profiler state that
// makes torch open the scopes it emits only for a profiler
// (_RecordFunctionFast checks that the PROFILER_STATE slot holds one): the
// bridge installs it on threads in every recording window, and takes it off
// outside windows unless memory is profiled (bridge.cpp).
//
// Every allocator torch has reports to c10::reportMemoryUsageToProfiler (the
// CPU allocator through ProfiledCPUMemoryReporter, the CUDA caching allocator
// directly), which hands each allocation (+bytes) and free (-bytes) with the
// allocator's totals to the thread's ThreadLocalDebugInfo of kind
// PROFILER_STATE, if it says memoryProfilingEnabled(). torch.profiler puts its
// own state there; when that slot is empty on a thread, the bridge puts this
// reporter there. It is a ProfilerStateBase in the Disabled state, not a bare
// MemoryReportingInfoBase, because torch static_casts whatever it finds in the
// slot to ProfilerStateBase (profilerEnabled(), getProfilerConfig()): as a
// disabled profiler it reads as "no profiler" there. torch.profiler's
// enableProfiler requires the slot to be empty ("Profiler is already enabled
// on this thread"), so the agent wraps it and the reporter steps aside
// (step_aside(), agent/src/api/torch_profiler_hooks.cpp).
//
// The slot is thread-local but travels with c10::ThreadLocalState (autograd
// workers, at::launch, JIT forks), so a thread that runs ops for another
// carries the reporter installed on that one; other threads get it at their
// first op (install()).
#pragma once
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/profiler/orchestration/observer.h>

#include <memory>

#include "ptprof/bridge_api.h"
#include "torch_compat.hpp"

namespace ptprof::torch_bridge {

class MemoryReporter final : public torch::profiler::impl::ProfilerStateBase {
 public:
  MemoryReporter()
      : ProfilerStateBase(torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::Disabled)) {}

  // Records only while a window records: torch.profiler reports memory in
  // active steps only. Checked here, before the agent looks up the thread
  // (which would register a thread that only frees).
  void reportMemoryUsage(void* ptr, int64_t alloc_size, MemoryTotal total_allocated, MemoryTotal total_reserved,
                         c10::Device device) override {
    if (ptprof_agent_memory_recording() == 0) return;
    ptprof_memory_event m;
    m.ptr = reinterpret_cast<uintptr_t>(ptr);
    m.bytes = alloc_size;
    m.total_allocated = int64_t(total_allocated);
    m.total_reserved = int64_t(total_reserved);
    m.device_type = int8_t(device.type());
    m.device_index = int8_t(device.index());
    ptprof_agent_memory(&m);
  }

  // Asked by the allocator before every allocation and free. Yes whenever the
  // session profiles memory, windows or not: torch's CPU allocator
  // (ProfiledCPUMemoryReporter) keeps a block's size only if this said yes
  // when it was allocated, and reports a free only with that size, so a block
  // allocated before a window and freed in it is reported only this way. The
  // price: outside windows torch keeps its size table (a mutex and a hash map
  // update per allocation and free), as under torch.profiler; only under
  // --profile-memory (or after a trigger that asked for memory).
  bool memoryProfilingEnabled() const override { return ptprof_agent_profile_memory() != 0; }

  torch::profiler::impl::ActiveProfilerType profilerType() override {
    return torch::profiler::impl::ActiveProfilerType::NONE;
  }

  // Puts `reporter` in the calling thread's PROFILER_STATE slot unless
  // something (torch.profiler, or the reporter itself) is already there.
  static void install(const std::shared_ptr<c10::DebugInfoBase>& reporter) {
    if (c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) == nullptr)
      c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, reporter);
  }

  // Takes `reporter` off the calling thread's slot for torch's profiler,
  // which is about to be enabled there (the agent's wrapper of torch's
  // enableProfiler*). Only when it is the last debug info pushed: one
  // pushed after it cannot be popped from under its owner (torch then
  // refuses, as without this). install() puts it back once torch's profiler
  // has popped its own state.
  static void step_aside(const std::shared_ptr<c10::DebugInfoBase>& reporter) noexcept {
    // Checked first without _peek: its refusal is a c10::Error, which
    // captures a backtrace, and this runs at user scopes outside windows.
    if (c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) != reporter.get()) return;
    try {
      if (c10::ThreadLocalDebugInfo::_peek(c10::DebugInfoKind::PROFILER_STATE) == reporter)
        c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
    } catch (...) {
      // _peek throws when the last info pushed is of another kind: leave it.
    }
  }
};

}  // namespace ptprof::torch_bridge
