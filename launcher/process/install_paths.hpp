// Where the launcher finds what it injects: the agent library, the Python
// module directory and the torch bridge's sources. Same relative layout in the build tree and an install.
#pragma once
#include <string>

#include "ptprof/status.hpp"

namespace ptprof::launcher {

struct InstallPaths {
  std::string launcher;    // this ptprof executable
  std::string agent;       // libptprof_agent.so
  std::string preload;     // what LD_PRELOAD starts with: the agent, after the sanitizer runtime in sanitizer builds
  std::string python_dir;  // directory holding the `ptprof` package
  std::string bridge_kit;  // the torch bridge's sources (cmake/BridgeKit.cmake)
  // Bridges built with ptprof for the torches its build machine had
  // (bridge::kPrebuiltDir under the prefix; the wheel carries them).
  std::string prebuilt_bridges;
};

Result<InstallPaths> find_install_paths();

}  // namespace ptprof::launcher
