#include "format/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ptprof::format::detail {
namespace {

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "another kind of file";
}

}  // namespace

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status InputFile::open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO (or a device) must not wait for a writer
  // before its type can be checked.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd_ < 0) {
    return Status::error(path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    return Status::error(path + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::error(path + ": not a regular file (a trace file is; this is " + file_kind(st.st_mode) + ")");
  }
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
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
