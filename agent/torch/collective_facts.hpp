// What torch knows of a collective call, read where its `record_param_comms`
// scope begins: the ParamCommsDebugInfo that c10d's RECORD_PARAM_COMMS macros
// put in the thread's debug info just before opening the scope
// (torch/csrc/distributed/c10d/ParamCommsUtils.hpp). What each torch has:
//
//   torch 1.13   rank, collective ("column") name, in/out message sizes,
//                dtype; no process group, sequence number or group size.
//                Only NCCL's process group records it; gloo's does not.
//   torch 2.x    also the process group's name and description, the group
//                size and (NCCL) the sequence number; gloo's process group
//                records no record_param_comms at all (checked with
//                torch.profiler on 2.15: only c10d::allreduce_ and
//                gloo:all_reduce, without facts).
//
// Each getter is detected, not assumed by version: a torch that drops or adds
// one compiles the same source.
#pragma once
#include <ATen/record_function.h>
#include <c10/core/ScalarType.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/distributed/c10d/ParamCommsUtils.hpp>

#include <cstring>
#include <string>

#include "ptprof/bridge_api.h"

namespace ptprof::torch_bridge {

inline bool is_param_comms(const char* name) noexcept {
  return name != nullptr && name[0] == 'r' && std::strcmp(name, "record_param_comms") == 0;
}

template <class I>
std::string collective_name(const I& info) {
  if constexpr (requires { info.getCollectiveName(); })
    return info.getCollectiveName();
  else
    return info.getColumnName();  // torch 1.x's spelling
}

// The facts of `info` into `c`; the strings it points at live in `text`.
// A template, so that a getter a torch lacks is never compiled.
template <class I>
void collective_facts(const I& info, ptprof_collective& c, std::string (&text)[3]) {
  text[0] = collective_name(info);
  c.name = text[0].c_str();
  if constexpr (requires { info.getProcessGroupName(); }) {
    text[1] = info.getProcessGroupName();
    c.process_group = text[1].c_str();
    if constexpr (requires { info.getProcessGroupDesc(); }) {
      text[2] = info.getProcessGroupDesc();
      c.process_group_desc = text[2].empty() ? nullptr : text[2].c_str();
    }
  }
  c.dtype = c10::toString(info.getDType());
  c.seq = -1;
  if constexpr (requires { info.getSequenceNumber(); }) c.seq = info.getSequenceNumber();
  if constexpr (requires { info.getInMessageNelems(); }) {
    c.in_elements = info.getInMessageNelems();
    c.out_elements = info.getOutMessageNelems();
  } else {
    c.in_elements = info.getInMessageSize();
    c.out_elements = info.getOutMessageSize();
  }
  c.group_size = -1;
  if constexpr (requires { info.getWorldSize(); }) c.group_size = info.getWorldSize();
  c.rank = info.getRank();
}

// Called after op_begin of a record_param_comms scope with the op's handle.
// Rare (a few calls per step), so it may allocate; never throws into torch.
[[gnu::noinline]] inline void report_collective(uint64_t handle) noexcept {
  try {
    const auto* base = c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PARAM_COMMS_INFO);
    // The kind holds nothing else: RECORD_PARAM_COMMS is its only writer.
    const auto* info = static_cast<const torch::ParamCommsDebugInfo*>(base);
    if (info == nullptr) return;
    ptprof_collective c{};
    c.handle = handle;
    std::string text[3];
    collective_facts(*info, c, text);
    ptprof_agent_op_collective(&c);
  } catch (...) {
    // An allocation failed: the facts are lost, the op is recorded.
  }
}

}  // namespace ptprof::torch_bridge
