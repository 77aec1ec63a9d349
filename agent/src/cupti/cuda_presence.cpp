#include "cupti/cuda_presence.hpp"

#include <link.h>

#include <string_view>

namespace ptprof::agent {

namespace {

bool is_cuda_library(std::string_view path) {
  auto slash = path.rfind('/');
  std::string_view b = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return b.starts_with("libcudart.so") || b.starts_with("libcuda.so") || b.starts_with("libtorch_cuda.so");
}

int find_cuda(dl_phdr_info* info, size_t, void* found) {
  if (info->dlpi_name && is_cuda_library(info->dlpi_name)) {
    *static_cast<bool*>(found) = true;
    return 1;
  }
  return 0;
}

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

bool cuda_library_loaded() {
  bool found = false;
  dl_iterate_phdr(find_cuda, &found);
  return found;
}

}  // namespace ptprof::agent
