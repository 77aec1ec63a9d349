// Which torch the process has loaded, found from the loaded libtorch_cpu.so
// alone (no Python, no torch symbol), so it also works before the bridge is
// loaded: the agent may call it to decide whether dlopen-ing the bridge is
// safe at all (a bridge built for another torch pulls in a second libtorch).
#pragma once
#include <string>
#include <vector>

namespace ptprof::torch_bridge {

struct LoadedTorch {
  int major = -1, minor = -1;  // -1: the version could not be read
  std::string version;         // e.g. "1.13" or "2.11.0+cu130"
  std::string path;            // the libtorch_cpu.so as loaded
};

// Every libtorch_cpu.so* mapped in the process (normally one). The version
// comes from the file name's soname suffix (Debian: libtorch_cpu.so.1.13), or
// from torch/version.py next to a pip/conda torch's lib/ dir.
std::vector<LoadedTorch> loaded_torch_libraries();

// Parses "X.Y..." at the start of `text` (digits, dot, digits).
bool parse_major_minor(const std::string& text, int& major, int& minor);

}  // namespace ptprof::torch_bridge
