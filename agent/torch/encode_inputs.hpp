// RecordFunction inputs -> shapes.hpp encoding, in the terms torch 1.13's
// profiler uses to classify an input (torch/csrc/profiler/collection.cpp,
// InputOutputEncoder::push), so decoding gives back torch's text.
#pragma once
#include <ATen/core/ivalue.h>

#include "ptprof/shapes.hpp"

namespace ptprof::torch_bridge {

inline bool encode_input(shapes::Encoder& enc, const c10::IValue& v) noexcept {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    // torch skips nested tensors' sizes the same way (they have none).
    if (!t.defined() || t.is_nested()) return enc.undefined();
    try {
      const auto sizes = t.sizes();  // throws for symbolic-size tensor subclasses
      return enc.tensor(static_cast<uint8_t>(t.scalar_type()), {sizes.data(), sizes.size()});
    } catch (...) {
      return enc.undefined();
    }
  }
  // Concrete values, as torch 2.x's "Concrete Inputs" (torch's shapes text
  // still prints [] for them): ints and int lists such as a factory's size.
  if (v.isInt()) return enc.int_value(v.toInt());
  if (v.isIntList()) {
    const auto list = v.toListRef();  // no copy: the list's own IValues
    return enc.int_list(list, list.size(), [](const auto& l, size_t i) { return l[i].isInt() ? l[i].toInt() : 0; });
  }
  if (v.isScalar()) return enc.scalar();
  if (v.isTensorList()) return enc.tensor_list(v.toListRef().size());
  return enc.other();
}

// Returns the bytes written into `buf` (at most `capacity`, which must be >= 1).
inline uint16_t encode_inputs(c10::ArrayRef<const c10::IValue> inputs, uint8_t* buf, size_t capacity) noexcept {
  shapes::Encoder enc(buf, capacity);
  for (const auto& v : inputs)
    if (!encode_input(enc, v)) break;
  return static_cast<uint16_t>(enc.size());
}

}  // namespace ptprof::torch_bridge
