#include "cuda_presence.hpp"

#include <link.h>

#include <string_view>

namespace ptprof::agent {

namespace {

int collect(dl_phdr_info* info, size_t, void* out) {
  if (info->dlpi_name && *info->dlpi_name) static_cast<std::vector<std::string>*>(out)->emplace_back(info->dlpi_name);
  return 0;
}

}  // namespace

std::vector<std::string> loaded_libraries() {
  std::vector<std::string> v;
  dl_iterate_phdr(collect, &v);
  return v;
}

bool has_cuda_library(const std::vector<std::string>& loaded) {
  for (const std::string& path : loaded) {
    std::string_view p = path;
    auto slash = p.rfind('/');
    std::string_view b = slash == std::string_view::npos ? p : p.substr(slash + 1);
    if (b.starts_with("libcudart.so") || b.starts_with("libcuda.so") || b.starts_with("libtorch_cuda.so")) return true;
  }
  return false;
}

}  // namespace ptprof::agent
