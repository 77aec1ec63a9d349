#include <algorithm>
#include <filesystem>

#include "ptprof/analysis/trace_file.hpp"

namespace ptprof::format {

namespace fs = std::filesystem;

Result<std::vector<std::string>> expand_trace_paths(const std::vector<std::string>& paths,
                                                    std::vector<std::string>* notes) {
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
    std::vector<std::string> found, unfinished;
    for (auto it = fs::directory_iterator(p, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      const fs::path& f = it->path();
      if (!it->is_regular_file(ec)) continue;
      if (f.extension() == ".bin") found.push_back(f.string());
      if (f.extension() == ".tmp" && f.stem().extension() == ".bin") unfinished.push_back(f.string());
    }
    if (ec) {
      return Status::error(p + ": " + ec.message());
    }
    std::string left_out;
    if (!unfinished.empty()) {
      std::sort(unfinished.begin(), unfinished.end());
      left_out = std::to_string(unfinished.size()) + " unfinished trace file" + (unfinished.size() == 1 ? "" : "s") +
                 " (*.bin.tmp: a window being written, or left by a launcher that was killed) not read; name one " +
                 "to read what it holds, e.g. " + unfinished.front();
    }
    if (found.empty()) {
      return Status::error(p + ": no trace files (*.bin) in this directory" +
                           (left_out.empty() ? "" : "; " + left_out));
    }
    if (notes && !left_out.empty()) notes->push_back(p + ": " += left_out);
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

}  // namespace ptprof::format
