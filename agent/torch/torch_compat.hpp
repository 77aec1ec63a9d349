// Everything the bridge takes from torch that differs, or could differ,
// between the torches it is compiled against — one place, so bridge.cpp reads
// the same for all of them. Checked against Debian's torch 1.13 and pip's
// torch 2.15 headers (ATen/record_function.h) and Python sources:
//
//   RecordFunction::name()      const char* in 1.13 and 2.x; c10::StringView in
//                               1.10-1.12. op_name() accepts both.
//   RecordScope                 the same ten scopes, same order, in 1.13 and
//                               2.15; wire_scope() maps them by name, so a torch
//                               that adds or renumbers scopes cannot change what
//                               is recorded (an unknown scope is recorded as
//                               Unknown).
//   inputs()                    ArrayRef<const IValue> in both; 2.x adds
//                               kwinputs(), which torch.profiler's input shapes
//                               do not use either.
//   handle(), seqNr(),          the same in both; handle() is 0 unless the
//   forwardThreadId(), isAsync() callback asks needsIds(true).
//   addGlobalCallback,          the same in both (1.13's GlobalCallbackManager,
//   disableCallback,            kept in 2.x): toggling from inside a callback
//   reenableCallback            is safe in both (agent/torch/README.md).
//   optional                    c10::optional in 1.13, std::optional in 2.x:
//                               not used.
//   MemoryReportingInfoBase::   total_allocated/total_reserved are int64_t in
//   reportMemoryUsage           1.13 and size_t in 2.x: MemoryTotal is
//                               whichever the torch declares. The CPU
//                               allocator reports in both through
//                               ProfiledCPUMemoryReporter (alloc +bytes, free
//                               -bytes of a block allocated while profiled;
//                               total_reserved 0).
//   DebugInfoKind::             an enum value in 1.13, a static member in
//   PROFILER_STATE              2.x: the same spelling works for both.
//   ProfilerStateBase           torch/csrc/profiler/orchestration/observer.h in
//                               both, constructible from a ProfilerConfig;
//                               profilerType() the one pure virtual.
//   Steps                       torch.optim.Optimizer wraps step() in
//                               record_function("Optimizer.step#<Class>.step")
//                               in both (USER_SCOPE); 2.x's record_function
//                               enters through the op profiler::_record_function_
//                               enter_new, recorded like any op (reports hide
//                               profiler::* as torch does).
#pragma once
#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <torch/version.h>

#include <type_traits>

#include "ptprof/record.hpp"

namespace ptprof::torch_bridge {

// A template, so that the branch a torch does not take is never compiled.
template <typename RF = at::RecordFunction>
inline const char* op_name(const RF& fn) {
  if constexpr (std::is_same_v<std::decay_t<decltype(fn.name())>, const char*>)
    return fn.name();
  else
    return fn.name().str();  // c10::StringView (torch <= 1.12)
}

// The type of reportMemoryUsage's total_allocated (and total_reserved).
template <class F>
struct MemoryTotalOf;
template <class C, class R, class Ptr, class Size, class Total, class Reserved, class Device>
struct MemoryTotalOf<R (C::*)(Ptr, Size, Total, Reserved, Device)> {
  using type = Total;
};
using MemoryTotal = typename MemoryTotalOf<decltype(&c10::MemoryReportingInfoBase::reportMemoryUsage)>::type;

// torch.profiler(with_stack=True) attributes the ops under a backward
// function to the forward op of its sequence number in 1.x
// (EventList._set_backward_stacktraces), to the Python frame running them
// (the caller of backward()) in 2.x, whose Python tracer names them.
inline constexpr uint8_t kBackwardFunctionFlags = TORCH_VERSION_MAJOR >= 2 ? wire::kOpCallerStacks : 0;

inline uint8_t wire_scope(at::RecordScope s) noexcept {
  using W = wire::OpScope;
  W w;
  switch (s) {
    case at::RecordScope::FUNCTION:
      w = W::Function;
      break;
    case at::RecordScope::BACKWARD_FUNCTION:
      w = W::BackwardFunction;
      break;
    case at::RecordScope::TORCHSCRIPT_FUNCTION:
      w = W::TorchScriptFunction;
      break;
    case at::RecordScope::KERNEL_FUNCTION_DTYPE:
      w = W::KernelFunctionDtype;
      break;
    case at::RecordScope::CUSTOM_CLASS:
      w = W::CustomClass;
      break;
    case at::RecordScope::BUILD_FEATURE:
      w = W::BuildFeature;
      break;
    case at::RecordScope::LITE_INTERPRETER:
      w = W::LiteInterpreter;
      break;
    case at::RecordScope::USER_SCOPE:
      w = W::UserScope;
      break;
    case at::RecordScope::STATIC_RUNTIME_OP:
      w = W::StaticRuntimeOp;
      break;
    case at::RecordScope::STATIC_RUNTIME_MODEL:
      w = W::StaticRuntimeModel;
      break;
    default:
      w = W::Unknown;
      break;
  }
  return static_cast<uint8_t>(w);
}

}  // namespace ptprof::torch_bridge
