#include "runtime/shm_reservation.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/log.hpp"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older headers lack it
#endif

namespace ptprof::agent {
namespace {

enum class Populate { Done, NoRoom, Unsupported };

// Allocates the pages of [p, p + n) of a shared mapping, as a write to each
// would, but reports a full /dev/shm (EFAULT: the write would be a SIGBUS)
// instead of faulting.
Populate populate_range(uint8_t* p, size_t n) {
  const auto page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t skip = uintptr_t(p) & (page - 1);  // madvise wants a page-aligned start
  uint8_t* const start = p - skip;
  const size_t length = (skip + n + page - 1) & ~(page - 1);
  for (;;) {
    if (::madvise(start, length, MADV_POPULATE_WRITE) == 0) return Populate::Done;
    if (errno == EINTR || errno == EAGAIN) continue;
    return errno == EINVAL ? Populate::Unsupported : Populate::NoRoom;
  }
}

}  // namespace

bool ShmReservation::attach(int fd, void* base, size_t bytes, uint64_t first_bytes) {
  base_ = static_cast<uint8_t*>(base);
  bytes_ = bytes;
  switch (populate_range(base_, size_t(first_bytes))) {
    case Populate::Done:
      by_mapping_ = true;
      ::close(fd);
      return true;
    case Populate::NoRoom:
      return false;
    case Populate::Unsupported:
      break;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) return false;
  fd_ = fd;
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  if (fallocate(0, first_bytes)) return true;
  fd_ = -1;
  return false;
}

bool ShmReservation::reserve(uint64_t offset, uint64_t bytes) {
  if (offset >= bytes_ || bytes == 0) return true;
  if (bytes > bytes_ - offset) bytes = bytes_ - offset;
  if (by_mapping_) return populate(offset, bytes);
  if (fd_ < 0) return true;  // let go: unreserved
  if (!fd_is_ours()) {
    log(Level::Debug, "the program reused the descriptor of this process's region; later parts are not reserved");
    fd_ = -1;
    return true;
  }
  return fallocate(offset, bytes);
}

void ShmReservation::release() {
  if (fd_ >= 0 && fd_is_ours()) ::close(fd_);
  *this = ShmReservation{};
}

bool ShmReservation::populate(uint64_t offset, uint64_t bytes) const {
  return populate_range(base_ + offset, size_t(bytes)) != Populate::NoRoom;
}

bool ShmReservation::fallocate(uint64_t offset, uint64_t bytes) const {
  int rc;
  do {
    rc = ::posix_fallocate(fd_, off_t(offset), off_t(bytes));
  } while (rc == EINTR);
  // A file system that cannot reserve (not tmpfs) gets the old behaviour.
  return rc == 0 || rc == EOPNOTSUPP || rc == ENOSYS;
}

bool ShmReservation::fd_is_ours() const {
  struct stat st {};
  return ::fstat(fd_, &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_;
}

}  // namespace ptprof::agent
