#include "input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ptprof::format::detail {

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status InputFile::open(const std::string& path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    return Status::error(path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    return Status::error(path + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::error(path + ": not a regular file");
  }
  size_ = uint64_t(st.st_size);
  return {};
}

bool InputFile::read(uint64_t offset, void* out, size_t n) const {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    ssize_t got = ::pread(fd_, p, n, off_t(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= size_t(got);
    offset += uint64_t(got);
  }
  return true;
}

}  // namespace ptprof::format::detail
