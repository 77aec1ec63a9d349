// The identity of an op's tensor inputs, for the memory categories
// (bridge_api.h: ptprof_agent_op_tensors): each tensor's TensorImpl and
// storage, its size as torch's memory profiler computes it, and whether the
// op's schema writes it. Only in windows that record memory and shapes.
//
// torch's memory profiler (torch/profiler/_memory_profiler.py) matches each
// op against every overload of its name; the bridge has the overload torch
// dispatched, so it applies torch's matching rules to that one schema.
#pragma once
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <pthread.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <unordered_map>

#include "ptprof/bridge_api.h"
#include "ptprof/record.hpp"

namespace ptprof::torch_bridge {

// torch's profiler keeps a weak reference to every TensorImpl it records
// (torch/csrc/profiler/collection.h, RawTensorMetadata's weak_self_): the
// object's memory then stays allocated, so no later TensorImpl takes its
// address while the profile lasts, and the memory profiler tells tensors
// apart by that address. The same here, for as long as a window wants
// tensor identity (the bridge clears them when such windows stop); the cost,
// as under torch.profiler, is the TensorImpls' memory (a few hundred bytes
// each) held until then.
class ImplPins;
inline ImplPins& impl_pins();

class ImplPins {
 public:
  void pin(const at::Tensor& t) {
    c10::TensorImpl* impl = t.unsafeGetTensorImpl();
    std::lock_guard lock(mu_);
    if (pins_.find(impl) == pins_.end())
      pins_.emplace(impl, c10::weak_intrusive_ptr<c10::TensorImpl>(t.getIntrusivePtr()));
  }
  // A fork must not find the mutex held by another thread (fork_guard.hpp
  // says why): held across fork, released in parent and child. Its holders
  // take no other lock of ours while they hold it.
  static void hold_across_fork() {
    pthread_atfork([] { impl_pins().mu_.lock(); }, [] { impl_pins().mu_.unlock(); }, [] { impl_pins().mu_.unlock(); });
  }
  void clear() {
    std::unordered_map<c10::TensorImpl*, c10::weak_intrusive_ptr<c10::TensorImpl>> released;
    {
      std::lock_guard lock(mu_);
      released.swap(pins_);
    }
  }

 private:
  std::mutex mu_;
  std::unordered_map<c10::TensorImpl*, c10::weak_intrusive_ptr<c10::TensorImpl>> pins_;
};

inline ImplPins& impl_pins() {
  static ImplPins pins;
  return pins;
}

// torch's SizeMap: max(size[i] * stride[i]) over dims (1 for a 0-dim
// tensor) times the element size; 0 when the layout is not strided.
inline uint64_t strided_nbytes(const at::Tensor& t) {
  if (t.layout() != at::kStrided) return 0;
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  int64_t n = sizes.empty() ? 1 : 0;
  for (size_t i = 0; i < sizes.size() && i < strides.size(); ++i) n = std::max(n, sizes[i] * strides[i]);
  return uint64_t(std::max<int64_t>(n, 0)) * uint64_t(t.element_size());
}

inline bool tensor_ref(const at::Tensor& t, uint16_t index, uint8_t flags, ptprof_tensor_ref& r) {
  if (!t.defined()) return false;
  try {
    impl_pins().pin(t);
    r.impl = reinterpret_cast<uint64_t>(t.unsafeGetTensorImpl());
    r.storage = t.has_storage() ? reinterpret_cast<uint64_t>(t.storage().data()) : 0;
    r.nbytes = strided_nbytes(t);  // throws for symbolic sizes
    r.index = index;
    r.device_type = int8_t(t.device().type());
    r.device_index = int8_t(t.device().index());
    r.flags = uint8_t(flags | (t.layout() == at::kStrided ? wire::kTensorStrided : 0));
    r.role = uint8_t(wire::TensorRole::Input);
    return true;
  } catch (...) {
    return false;
  }
}

// An input as torch's profiler hands it to its memory profiler's schema
// matching (_memory_profiler.SchemaMatcher): a tensor with storage, a tensor
// list, a number, or None (everything else, an undefined tensor included).
enum class Observed : uint8_t { None, Tensor, TensorList, Bool, Int, Float, Complex };

inline Observed observe(const c10::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    return t.defined() && t.has_storage() ? Observed::Tensor : Observed::None;
  }
  if (v.isTensorList()) return Observed::TensorList;
  if (v.isBool()) return Observed::Bool;
  if (v.isInt()) return Observed::Int;
  if (v.isDouble()) return Observed::Float;
  if (v.isComplexDouble()) return Observed::Complex;
  return Observed::None;
}

// SchemaMatcher._types_match, on the JIT type kinds it tests.
inline bool types_match(Observed o, const c10::TypePtr& type) {
  using K = c10::TypeKind;
  switch (type->kind()) {
    case K::OptionalType:
      return o == Observed::None || types_match(o, type->expectRef<c10::OptionalType>().getElementType());
    case K::AnyType:
      return true;
    default:
      break;
  }
  if (type->isSubtypeOf(*c10::ListType::ofTensors())) return o == Observed::TensorList;
  switch (type->kind()) {
    case K::TensorType:
      return o == Observed::Tensor;
    case K::NoneType:
      return o == Observed::None;
    case K::BoolType:
      return o == Observed::Bool;
    case K::IntType:
      return o == Observed::Int || o == Observed::Bool;  // Python: a bool is an int
    case K::FloatType:
      return o == Observed::Float;
    case K::ComplexType:
      return o == Observed::Complex;
    case K::NumberType:
      return o != Observed::None && o != Observed::Tensor && o != Observed::TensorList;
    default:
      return o == Observed::None;  // a type torch's profiler does not record
  }
}

// The schema of the overload torch dispatched, when torch's memory profiler
// would match it against what it recorded of the inputs; null otherwise (it
// then treats the op as having no schema: not a data-flow node of its own,
// and any input possibly written).
inline const c10::FunctionSchema* matched_schema(const at::RecordFunction& fn, c10::ArrayRef<const c10::IValue> in) {
  const auto name = fn.operator_name();
  if (!name) return nullptr;
  const auto op = c10::Dispatcher::singleton().findSchema(*name);
  if (!op) return nullptr;
  const c10::FunctionSchema& schema = op->schema();
  const auto& args = schema.arguments();
  if (args.size() != in.size()) return nullptr;
  for (size_t i = 0; i < args.size(); ++i)
    if (!types_match(observe(in[i]), args[i].type())) return nullptr;
  return &schema;
}

// Called after op_begin of `fn` (whose inputs torch boxed) with its handle.
[[gnu::noinline]] inline void report_tensors(const at::RecordFunction& fn) {
  const auto inputs = fn.inputs();
  const c10::FunctionSchema* schema = nullptr;
  try {
    schema = matched_schema(fn, inputs);
  } catch (...) {
    schema = nullptr;
  }
  std::array<ptprof_tensor_ref, wire::kMaxTensorRefs> refs;
  uint32_t n = 0;
  for (size_t i = 0; i < inputs.size() && i <= UINT16_MAX && n < refs.size(); ++i) {
    const c10::IValue& v = inputs[i];
    if (!v.isTensor() && !v.isTensorList()) continue;
    uint8_t flags = 0;
    if (!schema) {
      flags |= wire::kTensorNoMutability;
    } else if (const auto* alias = schema->arguments()[i].alias_info(); alias && alias->isWrite()) {
      flags |= wire::kTensorMutable;
    }
    if (v.isTensor()) {
      n += tensor_ref(v.toTensor(), uint16_t(i), flags, refs[n]) ? 1 : 0;
      continue;
    }
    for (const c10::IValue& e : v.toListRef()) {
      if (n >= refs.size()) break;
      if (e.isTensor()) n += tensor_ref(e.toTensor(), uint16_t(i), flags | wire::kTensorInList, refs[n]) ? 1 : 0;
    }
  }
  if (n == 0 && !schema) return;  // a scope without tensors: nothing to say
  ptprof_agent_op_tensors(fn.handle(), schema ? wire::kTensorGroupSchema : 0, refs.data(), n);
}

}  // namespace ptprof::torch_bridge
