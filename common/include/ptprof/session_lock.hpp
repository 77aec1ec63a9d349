// The launcher's liveness, as its session's shared memory says it: the
// launcher holds a read lock on the session's file for its whole life (an
// open-file-description lock, released however the launcher exits, SIGKILL
// included); agents and `ptprof trigger` test for it. Header-only and free of
// allocation: the agent calls it from its drain-less paths.
#pragma once
#include <fcntl.h>

namespace ptprof::wire {

// Takes the launcher's lock on the session's file descriptor.
inline bool hold_session_lock(int fd) {
  struct flock lock {};
  lock.l_type = F_RDLCK;
  lock.l_whence = SEEK_SET;
  return ::fcntl(fd, F_OFD_SETLK, &lock) == 0;
}

// Whether a launcher still holds the lock of the session open as `fd`. A
// kernel without OFD locks cannot tell: the launcher is then assumed alive.
inline bool session_lock_held(int fd) {
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  if (::fcntl(fd, F_OFD_GETLK, &lock) != 0) return true;
  return lock.l_type != F_UNLCK;
}

}  // namespace ptprof::wire
