#include "format/exclusive_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>  // renameat2, RENAME_NOREPLACE (glibc, _GNU_SOURCE)
#include <string_view>

namespace ptprof::format::detail {

int create_exclusive(const std::string& path, mode_t mode) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

int rename_no_replace(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return -1;
  // A file system without RENAME_NOREPLACE: link() fails on a taken name too.
  if (::link(from.c_str(), to.c_str()) == 0) {
    ::unlink(from.c_str());
    return 0;
  }
  if (errno != EPERM && errno != EOPNOTSUPP && errno != ENOSYS) return -1;
  // Nor hard links (vfat, some FUSE): check, then rename; only a racing
  // creator of the very name could still be replaced.
  struct stat st {};
  if (::lstat(to.c_str(), &st) == 0) {
    errno = EEXIST;
    return -1;
  }
  return ::rename(from.c_str(), to.c_str());
}

std::string alternative_name(const std::string& path, unsigned n) {
  if (n == 0) return path;
  const std::string suffix = "-" + std::to_string(n);
  constexpr std::string_view kBin = ".bin";
  if (path.size() > kBin.size() && path.compare(path.size() - kBin.size(), kBin.size(), kBin) == 0)
    return path.substr(0, path.size() - kBin.size()) + suffix + std::string(kBin);
  return path + suffix;
}

}  // namespace ptprof::format::detail
