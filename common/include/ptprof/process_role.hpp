// The role a process is named by in the run's summary, `ptprof report` and
// the exports (issue 23): main, DataLoader worker N, compile worker, rank N,
// or child. The agent tells DataLoader and compile workers
// (wire::ProcessRole, agent/src/cpython/process_role.hpp); a rank is a process whose
// RANK is set and that is no worker; the main process is one whose parent is
// not among the profiled processes; any other is a child.
#pragma once
#include <cstdint>
#include <string>

#include "ptprof/shm_abi.hpp"

namespace ptprof {

// `role`: wire::ProcessRole as recorded (an unknown value reads as Unknown).
inline std::string process_role_text(uint32_t role, int32_t role_index, int32_t rank, bool parent_profiled) {
  if (role == uint32_t(wire::ProcessRole::DataLoaderWorker))
    return role_index >= 0 ? "DataLoader worker " + std::to_string(role_index) : "DataLoader worker";
  if (role == uint32_t(wire::ProcessRole::CompileWorker)) return "compile worker";
  if (rank >= 0) return "rank " + std::to_string(rank);
  return parent_profiled ? "child" : "main";
}

// A recorded role that this version knows, else Unknown (0).
inline uint32_t known_process_role(uint32_t role) {
  return role <= uint32_t(wire::ProcessRole::CompileWorker) ? role : 0;
}

}  // namespace ptprof
