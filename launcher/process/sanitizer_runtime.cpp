#include "process/sanitizer_runtime.hpp"

#include <link.h>

#include <string_view>

namespace ptprof::launcher {

#if defined(PTPROF_SANITIZER_BUILD)
namespace {

int find_runtime(dl_phdr_info* info, size_t /*size*/, void* out) {
  const std::string_view path = info->dlpi_name ? info->dlpi_name : "";
  const std::string_view file = path.substr(path.rfind('/') + 1);
  for (std::string_view runtime : {"libasan.so", "libtsan.so", "libclang_rt.asan", "libclang_rt.tsan"}) {
    if (file.rfind(runtime, 0) == 0) {
      *static_cast<std::string*>(out) = std::string(path);
      return 1;
    }
  }
  return 0;
}

}  // namespace

std::string sanitizer_runtime() {
  std::string path;
  ::dl_iterate_phdr(find_runtime, &path);
  return path;
}
#else
std::string sanitizer_runtime() { return {}; }
#endif

}  // namespace ptprof::launcher
