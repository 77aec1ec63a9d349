#include "collect/session.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "ptprof/session_lock.hpp"

namespace ptprof::launcher {
namespace {

bool random_hex(char* out, size_t bytes) {
  unsigned char buf[32];
  if (bytes > sizeof buf) return false;
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = getrandom(buf + got, bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    got += size_t(n);
  }
  for (size_t i = 0; i < bytes; ++i) std::snprintf(out + 2 * i, 3, "%02x", buf[i]);
  return true;
}

}  // namespace

Result<std::unique_ptr<Session>> Session::create(uint64_t ring_bytes, clock::Kind clock) {
  auto s = std::make_unique<Session>(Private{});
  char hex[33] = {};
  if (!random_hex(hex, 16)) {
    return Status::error(std::string("cannot get random bytes for the session name: ") + std::strerror(errno));
  }
  s->name_ = std::string("/ptprof-") + hex;
  int fd = ::shm_open(s->name_.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::error("cannot create shared memory " + s->name_ + ": " + std::strerror(errno));
  }
  s->linked_ = true;
  // shm_open applies the umask; make the mode exact.
  ::fchmod(fd, 0600);
  if (::ftruncate(fd, sizeof(wire::SessionHeader)) != 0) {
    ::close(fd);
    return Status::error("cannot size shared memory " + s->name_ + ": " + std::strerror(errno));
  }
  // Agents store into it from the target: its pages must exist before then,
  // or a full /dev/shm turns those stores into SIGBUS.
  if (int rc = ::posix_fallocate(fd, 0, sizeof(wire::SessionHeader)); rc != 0 && rc != EOPNOTSUPP) {
    ::close(fd);
    return Status::error("cannot reserve shared memory " + s->name_ + ": " + std::strerror(rc) +
                         " (is /dev/shm full?)");
  }
  // Held until the launcher exits, however it exits: agents that find the
  // lock gone know that no one drains the session any more.
  if (!wire::hold_session_lock(fd)) {
    ::close(fd);
    return Status::error("cannot lock shared memory " + s->name_ + ": " + std::strerror(errno));
  }
  s->fd_ = fd;
  void* p = ::mmap(nullptr, sizeof(wire::SessionHeader), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    return Status::error("cannot map shared memory " + s->name_ + ": " + std::strerror(errno));
  }
  auto* h = std::construct_at(static_cast<wire::SessionHeader*>(p));
  h->magic = wire::kSessionMagic;
  h->version = wire::kWireVersion;
  h->clock_kind = uint32_t(clock);
  h->ring_bytes = ring_bytes;
  std::snprintf(h->name, sizeof h->name, "%s", s->name_.c_str());
  s->header_ = h;
  return s;
}

void Session::unlink() {
  if (linked_) ::shm_unlink(name_.c_str());
  linked_ = false;
}

Session::~Session() {
  unlink();
  if (header_) ::munmap(header_, sizeof(wire::SessionHeader));
  if (fd_ >= 0) ::close(fd_);
}

RegionMapping::~RegionMapping() {
  if (base) ::munmap(base, bytes);
}

Result<std::unique_ptr<RegionMapping>> map_region(const char* name, std::string_view session, uid_t owner) {
  if (!wire::is_region_of(name, session)) {
    return Status::error(std::string("the region name '") + name + "' is not one of session " + std::string(session) +
                         "'s (<session>.<16 hex digits>); not opened");
  }
  // shm_open adds O_NOFOLLOW: a link in /dev/shm is not followed.
  int fd = ::shm_open(name, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) {
    return Status::error(std::string("cannot open ") + name + ": " + std::strerror(errno));
  }
  // The name is the session's: whatever is wrong with the object, its name
  // goes, so that nothing of the session is left in /dev/shm.
  struct stat st {};
  std::string refused;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    refused = " is not a shared-memory object";
  else if (st.st_uid != owner)
    refused = " is owned by uid " + std::to_string(st.st_uid) + ", not by the launcher's (" + std::to_string(owner) +
              "); not read";
  else if (size_t(st.st_size) < sizeof(wire::ProcessHeader))
    refused = " is too small to be a process region";
  if (!refused.empty()) {
    ::close(fd);
    ::shm_unlink(name);
    return Status::error(std::string(name) + refused);
  }
  void* p = ::mmap(nullptr, size_t(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  ::shm_unlink(name);
  if (p == MAP_FAILED) {
    return Status::error(std::string("cannot map ") + name + ": " + std::strerror(errno));
  }
  auto m = std::make_unique<RegionMapping>();
  m->base = p;
  m->bytes = size_t(st.st_size);
  auto* h = m->header();
  if (h->magic != wire::kProcessMagic || h->version != wire::kWireVersion || !wire::layout_matches(*h, m->bytes)) {
    return Status::error(std::string(name) + " has an unknown layout");
  }
  return m;
}

}  // namespace ptprof::launcher
