#include "bridge/cache_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "ptprof/bridge_trust.hpp"

namespace ptprof::launcher {
namespace {

bool make_dirs(const std::string& path) {
  size_t start = 0;
  while (start < path.size()) {
    size_t slash = path.find('/', start + 1);
    std::string partial = path.substr(0, slash);
    if (!partial.empty() && ::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) return false;
    if (slash == std::string::npos) break;
    start = slash;
  }
  return true;
}

// Removes `name` in the directory `dir_fd`: a directory's contents first,
// never following a link (a link is removed, not what it names).
void remove_at(int dir_fd, const std::string& name) {
  struct stat st {};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    ::unlinkat(dir_fd, name.c_str(), 0);
    return;
  }
  int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return;
  }
  std::vector<std::string> children;
  while (dirent* e = ::readdir(d)) {
    std::string child = e->d_name;
    if (child != "." && child != "..") children.push_back(child);
  }
  for (const auto& child : children) remove_at(::dirfd(d), child);
  ::closedir(d);
  ::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR);
}

// 6 characters for a temporary name (mkstemp's alphabet).
std::string random_suffix() {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  uint64_t seed = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^ (uint64_t(::getpid()) << 32);
  std::string out;
  for (int i = 0; i < 6; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    out += kAlphabet[(seed >> 33) % (sizeof kAlphabet - 1)];
  }
  return out;
}

}  // namespace

CacheLock::~CacheLock() {
  if (fd_ >= 0) ::close(fd_);
}

CacheLock& CacheLock::operator=(CacheLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

Result<CacheDir> CacheDir::open(const std::string& root) {
  if (!make_dirs(root)) return Status::error("cannot create the cache directory " + root + ": " + std::strerror(errno));
  if (auto why = bridge::ownership_problem(root, 1); !why.empty())
    return Status::error("refusing the bridge cache " + root + ": " + why + " (docs/security.md)");
  std::unique_ptr<char, decltype(&std::free)> real(::realpath(root.c_str(), nullptr), &std::free);
  int fd = real ? ::open(real.get(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
  if (fd < 0) return Status::error("cannot open the cache directory " + root + ": " + std::strerror(errno));
  return CacheDir(root, fd);
}

CacheDir::~CacheDir() {
  if (fd_ >= 0) ::close(fd_);
}

Result<CacheLock> CacheDir::lock(const std::string& name, int timeout_s, const std::function<void()>& on_wait) const {
  int fd = ::openat(fd_, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Status::error("cannot open the lock " + path_of(name) + ": " + std::strerror(errno));
  CacheLock held(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || st.st_nlink != 1)
    return Status::error("refusing the lock " + path_of(name) + ": not a plain file of this user");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool told = false;
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR)
      return Status::error("cannot lock " + path_of(name) + ": " + std::strerror(errno));
    if (!told && on_wait) on_wait();
    told = true;
    if (std::chrono::steady_clock::now() >= deadline)
      return Status::error("another process held the lock " + path_of(name) + " for " + std::to_string(timeout_s) +
                           " s (PTPROF_BRIDGE_BUILD_TIMEOUT=" + std::to_string(timeout_s) + "): gave up waiting");
    ::usleep(100 * 1000);
  }
  return held;
}

bool CacheDir::exists(const std::string& name) const {
  struct stat st {};
  return ::fstatat(fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

std::string CacheDir::read(const std::string& name) const {
  std::string text;
  int fd = ::openat(fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return text;
  char buf[4096];
  ssize_t n;
  while (text.size() < (1 << 16) && ((n = ::read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)))
    if (n > 0) text.append(buf, size_t(n));
  ::close(fd);
  return text;
}

bool CacheDir::write(const std::string& name, const std::string& text) const {
  const std::string tmp = "." + name + ".new." + random_suffix();
  int fd = ::openat(fd_, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  ok = ::close(fd) == 0 && ok;
  if (ok && ::renameat(fd_, tmp.c_str(), fd_, name.c_str()) == 0) return true;
  ::unlinkat(fd_, tmp.c_str(), 0);
  return false;
}

Result<std::string> CacheDir::make_work_dir(const std::string& prefix) const {
  std::string templ = path_of(prefix + "XXXXXX");
  if (!::mkdtemp(templ.data())) return Status::error("cannot create " + templ + ": " + std::strerror(errno));
  return templ.substr(path_.size() + 1);
}

Status CacheDir::publish(const std::string& work, const std::string& entry) const {
  if (::renameat2(fd_, work.c_str(), fd_, entry.c_str(), RENAME_NOREPLACE) == 0) return Status::ok_status();
  // An entry is there (rebuilt on purpose, or broken): swap, then remove the
  // old one, now under the work directory's name.
  if (errno == EEXIST && ::renameat2(fd_, work.c_str(), fd_, entry.c_str(), RENAME_EXCHANGE) == 0) {
    remove(work);
    return Status::ok_status();
  }
  std::string e = std::strerror(errno);
  remove(work);
  return Status::error("cannot move the built bridge to " + path_of(entry) + ": " + e);
}

bool CacheDir::rename(const std::string& from, const std::string& to) const {
  return ::renameat(fd_, from.c_str(), fd_, to.c_str()) == 0;
}

void CacheDir::remove(const std::string& name) const { remove_at(fd_, name); }

void CacheDir::unlink(const std::string& name) const { ::unlinkat(fd_, name.c_str(), 0); }

bool write_new_file(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  return ::close(fd) == 0 && ok;
}

}  // namespace ptprof::launcher
