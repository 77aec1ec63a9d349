// Reserving parts of this process's region in /dev/shm as they come into use
// (a ring when a thread registers, the string arena as it grows), without
// trusting a file descriptor the program may have closed and reused.
//
// Programs close every descriptor they did not open (daemons, closerange(),
// some launchers) and then open files of their own under the same numbers: a
// descriptor kept for later would then grow, write to or close the program's
// file. So the region is reserved through its mapping
// (madvise(MADV_POPULATE_WRITE), Linux 5.14) and its descriptor closed as soon
// as it is mapped. An older kernel keeps the descriptor, and checks before each
// use that it is still the region's (device and inode); one the program took
// over is let go, never closed, and later parts go unreserved (as on a file
// system that cannot reserve).
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace ptprof::agent {

class ShmReservation {
 public:
  // Takes over `fd`, the region's freshly created object, mapped at `base`
  // (`bytes` long), and reserves [0, first_bytes). False when /dev/shm has no
  // room for them; `fd` is then still the caller's to close.
  bool attach(int fd, void* base, size_t bytes, uint64_t first_bytes);
  // Reserves [offset, offset + bytes) of the region. False when /dev/shm has
  // no room for it.
  bool reserve(uint64_t offset, uint64_t bytes);
  // The region is gone (a fork child's parent's): closes the descriptor only
  // if it is still the region's.
  void release();

 private:
  bool populate(uint64_t offset, uint64_t bytes) const;
  bool fallocate(uint64_t offset, uint64_t bytes) const;
  // Whether fd_ is still the region's object (the program may have closed it
  // and opened something else under its number).
  bool fd_is_ours() const;

  uint8_t* base_ = nullptr;
  size_t bytes_ = 0;
  bool by_mapping_ = false;  // MADV_POPULATE_WRITE works: no descriptor kept
  int fd_ = -1;              // only without MADV_POPULATE_WRITE
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

}  // namespace ptprof::agent
