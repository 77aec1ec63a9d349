// Where the launcher finds what it injects: the agent library and the Python
// module directory. Same relative layout in the build tree and an install.
#pragma once
#include <string>

#include "ptprof/status.hpp"

namespace ptprof::launcher {

struct InstallPaths {
  std::string agent;       // libptprof_agent.so
  std::string python_dir;  // directory holding the `ptprof` package
};

Result<InstallPaths> find_install_paths();

}  // namespace ptprof::launcher
