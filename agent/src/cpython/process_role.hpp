// What a process is (wire::ProcessRole), told by what the agent sees:
// - a DataLoader worker is forked by the DataLoader's iterator, whose
//   __init__ (torch/utils/data/dataloader.py, torch 1.x and 2.x) starts
//   worker `i` of `for i in range(self._num_workers)`: the forking thread's
//   Python frames, read in the parent just before the fork, name both;
// - a compile worker is torch inductor's: its pool's process runs
//   torch/_inductor/compile_worker (its command line says so, torch >= 2.2),
//   or is forked from inductor's code (an older pool, or the pool's own
//   workers); a compile worker's children are compile workers.
// The main process and ranks are the launcher's and the report's to tell
// (no parent in the session, RANK).
#pragma once
#include <cstdint>

#include "ptprof/shm_abi.hpp"

namespace ptprof::agent {

class PythonRuntime;

struct ProcessRoleInfo {
  wire::ProcessRole role = wire::ProcessRole::Unknown;
  int32_t index = -1;
};

// Called in the parent just before a fork (the prepare handler), on the
// forking thread: the role the child will have, from that thread's Python
// frames when it holds the GIL (a fork from Python: os.fork holds it).
// Unknown when the fork is not from Python or from no code it knows.
ProcessRoleInfo role_of_fork_child(PythonRuntime& python);

// The role of a process whose command line is `cmdline`, inheriting
// `parent`'s (a fork child's, from role_of_fork_child, or a compile worker's
// child).
ProcessRoleInfo role_at_registration(const char* cmdline, ProcessRoleInfo from_fork);

}  // namespace ptprof::agent
