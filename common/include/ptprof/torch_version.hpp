// Which torch a libtorch_cpu.so belongs to, found from the file alone (no
// Python, no torch symbol). The agent uses it before any bridge is loaded (a
// bridge built for another torch would pull a second libtorch into the
// process), the launcher to key its bridge cache, and the bridge to check
// the process once more.
#pragma once
#include <string>
#include <vector>

namespace ptprof::torch_bridge {

struct LoadedTorch {
  int major = -1, minor = -1;  // -1: the version could not be read
  std::string version;         // e.g. "1.13" or "2.11.0+cu130"
  std::string path;            // the libtorch_cpu.so as loaded
};

// The version of the torch whose libtorch_cpu.so is at `path`: the soname
// suffix (Debian: libtorch_cpu.so.1.13), else `__version__` of torch/version.py
// beside a pip/conda torch's lib/ directory. Looks through symlinks.
LoadedTorch torch_of_library(const std::string& path);

// Every libtorch_cpu.so* mapped in the process (normally one).
std::vector<LoadedTorch> loaded_torch_libraries();

// Parses "X.Y..." at the start of `text` (digits, dot, digits).
bool parse_major_minor(const std::string& text, int& major, int& minor);

}  // namespace ptprof::torch_bridge
