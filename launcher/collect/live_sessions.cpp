#include "collect/live_sessions.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ptprof/session_lock.hpp"

namespace ptprof::launcher {

LiveSession::~LiveSession() {
  if (header_) ::munmap(header_, sizeof(wire::SessionHeader));
  if (fd_ >= 0) ::close(fd_);
}

bool LiveSession::launcher_alive() const { return wire::session_lock_held(fd_); }

std::vector<int32_t> LiveSession::running_pids() const {
  std::vector<int32_t> pids;
  const uint32_t n = std::min(header_->next_slot.load(std::memory_order_acquire), wire::kMaxProcesses);
  for (uint32_t i = 0; i < n; ++i) {
    const wire::ProcessSlot& s = header_->slots[i];
    if (s.state.load(std::memory_order_acquire) != uint32_t(wire::SlotState::Ready)) continue;
    if (::kill(s.pid, 0) == 0 || errno == EPERM) pids.push_back(s.pid);
  }
  return pids;
}

Result<std::unique_ptr<LiveSession>> LiveSession::open(const std::string& given) {
  const std::string name = given.empty() || given[0] == '/' ? given : "/" + given;
  if (name.rfind("/ptprof-", 0) != 0 || name.find('.') != std::string::npos)
    return Status::error("'" + given +
                         "' is not a session name; accepted: a name `ptprof sessions` lists (ptprof-...)");
  std::unique_ptr<LiveSession> s(new LiveSession());
  s->name_ = name;
  s->fd_ = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (s->fd_ < 0) {
    if (errno == EACCES)
      return Status::error("session " + name + " belongs to another user: only its owner can use it");
    return Status::error("no session " + name + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(s->fd_, &st) != 0 || !S_ISREG(st.st_mode) || uint64_t(st.st_size) < sizeof(wire::SessionHeader))
    return Status::error(name + " is not a ptprof session");
  if (st.st_uid != ::geteuid())
    return Status::error("session " + name + " belongs to another user: only its owner can use it");
  void* p = ::mmap(nullptr, sizeof(wire::SessionHeader), PROT_READ | PROT_WRITE, MAP_SHARED, s->fd_, 0);
  if (p == MAP_FAILED) return Status::error("cannot map " + name + ": " + std::strerror(errno));
  s->header_ = static_cast<wire::SessionHeader*>(p);
  if (!wire::session_header_valid(*s->header_, uint64_t(st.st_size)))
    return Status::error(name + " is not a session of this ptprof version");
  if (!s->launcher_alive()) return Status::error("session " + name + " has ended (its launcher is gone)");
  return s;
}

std::vector<std::unique_ptr<LiveSession>> list_live_sessions() {
  std::vector<std::string> names;
  if (DIR* d = ::opendir("/dev/shm")) {
    while (dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      // Sessions, not their processes' regions (<session>.<random>).
      if (n.rfind("ptprof-", 0) == 0 && n.find('.') == std::string::npos) names.push_back("/" + n);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  std::vector<std::unique_ptr<LiveSession>> out;
  for (const std::string& n : names)
    if (auto s = LiveSession::open(n)) out.push_back(std::move(*s));
  return out;
}

}  // namespace ptprof::launcher
