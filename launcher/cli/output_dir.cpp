#include "cli/output_dir.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace ptprof::launcher {

Status prepare_output_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    return Status::error("cannot create output directory '" + dir +
                         "': " + (ec ? ec.message() : std::string("not a directory")));
  // mkstemp creates with O_EXCL: a probe never follows or reuses a name.
  std::string probe = dir + "/.ptprof-write-test-XXXXXX";
  int fd = ::mkostemp(probe.data(), O_CLOEXEC);
  if (fd < 0) return Status::error("output directory '" + dir + "' is not writable: " + std::strerror(errno));
  const char byte = 0;
  ssize_t wrote = ::write(fd, &byte, 1);
  int err = wrote == 1 ? 0 : errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  ::unlink(probe.c_str());
  if (err) return Status::error("output directory '" + dir + "' is not writable: " + std::strerror(err));
  return {};
}

}  // namespace ptprof::launcher
