#include "ptprof/torch_version.hpp"

#include <link.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>

namespace ptprof::torch_bridge {
namespace {

constexpr const char kLibName[] = "libtorch_cpu.so";

std::string basename_of(const std::string& p) {
  auto s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}
std::string dirname_of(const std::string& p) {
  auto s = p.rfind('/');
  return s == std::string::npos ? std::string(".") : p.substr(0, s);
}
std::string real_path(const std::string& p) {
  std::unique_ptr<char, decltype(&std::free)> r(realpath(p.c_str(), nullptr), &std::free);
  return r ? std::string(r.get()) : p;
}

// "libtorch_cpu.so.1.13[.0]" -> "1.13[.0]"; "" when unversioned.
std::string soname_suffix(const std::string& base) {
  const size_t n = sizeof(kLibName) - 1;
  if (base.size() > n + 1 && base.compare(0, n, kLibName) == 0 && base[n] == '.') return base.substr(n + 1);
  return {};
}

// The quoted value of `__version__` in torch/version.py (both the plain and
// the annotated `__version__: str = '...'` spellings).
std::string read_version_py(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("__version__", 0) != 0) continue;
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    auto q = line.find_first_of("'\"", eq);
    if (q == std::string::npos) continue;
    auto e = line.find(line[q], q + 1);
    if (e == std::string::npos) continue;
    return line.substr(q + 1, e - q - 1);
  }
  return {};
}

int collect(struct dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::vector<LoadedTorch>*>(data);
  if (!info->dlpi_name || !*info->dlpi_name) return 0;
  std::string path = info->dlpi_name;
  if (basename_of(path).rfind(kLibName, 0) != 0) return 0;
  const std::string real = real_path(path);
  for (const auto& seen : *out)
    if (real_path(seen.path) == real) return 0;
  out->push_back(torch_of_library(path));
  return 0;
}

}  // namespace

LoadedTorch torch_of_library(const std::string& path) {
  LoadedTorch t;
  t.path = path;
  // The name may be an unversioned symlink (torch/lib/libtorch_cpu.so ->
  // libtorch_cpu.so.1.13 on Debian), so look through it too.
  const std::string real = real_path(path);
  for (const auto& p : {path, real}) {
    if (auto v = soname_suffix(basename_of(p)); !v.empty() && parse_major_minor(v, t.major, t.minor)) {
      t.version = v;
      return t;
    }
  }
  for (const auto& p : {path, real}) {
    auto v = read_version_py(dirname_of(p) + "/../version.py");
    if (!v.empty() && parse_major_minor(v, t.major, t.minor)) {
      t.version = v;
      return t;
    }
  }
  return t;
}

bool parse_major_minor(const std::string& text, int& major, int& minor) {
  char* end = nullptr;
  long a = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '.' || a < 0 || a > INT_MAX) return false;
  const char* m = end + 1;
  long b = std::strtol(m, &end, 10);
  if (end == m || b < 0 || b > INT_MAX) return false;
  major = int(a);
  minor = int(b);
  return true;
}

std::vector<LoadedTorch> loaded_torch_libraries() {
  std::vector<LoadedTorch> out;
  dl_iterate_phdr(collect, &out);
  return out;
}

}  // namespace ptprof::torch_bridge
