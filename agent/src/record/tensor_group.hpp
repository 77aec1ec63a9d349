// Writes one TensorGroup record (record.hpp): the tensors an op took as
// inputs, or those a module or optimizer holds. Shared by the torch bridge's
// path and the Python bootstrap's.
#pragma once
#include <algorithm>
#include <array>
#include <span>

#include "ptprof/bridge_api.h"
#include "ptprof/record.hpp"
#include "record/thread_state.hpp"

namespace ptprof::agent {

inline void emit_tensor_group(ThreadState& t, wire::TensorGroupKind kind, uint64_t handle, uint64_t owner,
                              uint8_t flags, const ptprof_tensor_ref* refs, uint32_t count) {
  // A group past the record's room keeps its first tensors: the rest are
  // left out of the categories (they stay in the totals).
  const uint32_t n = std::min(count, wire::kMaxTensorRefs);
  std::array<wire::TensorRefRecord, wire::kMaxTensorRefs> out;
  for (uint32_t i = 0; i < n; ++i) {
    wire::TensorRefRecord& r = out[i];
    r = {};
    r.impl = refs[i].impl;
    r.storage = refs[i].storage;
    r.nbytes = refs[i].nbytes;
    r.index = refs[i].index;
    r.device_type = refs[i].device_type;
    r.device_index = refs[i].device_index;
    r.flags = refs[i].flags;
    r.role = refs[i].role;
  }
  wire::TensorGroupPayload p{};
  p.handle = handle;
  p.owner = owner;
  p.count = n;
  p.kind = uint8_t(kind);
  p.flags = flags;
  (void)t.emit(
      wire::RecordType::TensorGroup, 0, t.now(), p,
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(out.data()), n * sizeof(wire::TensorRefRecord)));
}

}  // namespace ptprof::agent
