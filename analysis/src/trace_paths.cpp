#include <algorithm>
#include <filesystem>

#include "ptprof/analysis/trace_file.hpp"

namespace ptprof::format {

namespace fs = std::filesystem;

Result<std::vector<std::string>> expand_trace_paths(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    std::error_code ec;
    auto st = fs::status(p, ec);
    if (ec || !fs::exists(st)) {
      return Status::error(p + ": no such file or directory");
    }
    if (!fs::is_directory(st)) {
      out.push_back(p);
      continue;
    }
    // Only finished files: a .bin.tmp is a window still being written (or
    // abandoned by a crash) and is read only when named explicitly.
    std::vector<std::string> found;
    for (auto it = fs::directory_iterator(p, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      if (it->path().extension() == ".bin" && it->is_regular_file(ec)) found.push_back(it->path().string());
    }
    if (ec) {
      return Status::error(p + ": " + ec.message());
    }
    if (found.empty()) {
      return Status::error(p + ": no trace files (*.bin) in this directory");
    }
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

}  // namespace ptprof::format
