// The bridge cache's root as the builder writes it: created private, verified
// to be the user's (or root's) and writable by no one else
// (ptprof/bridge_trust.hpp) before anything is written, and written only
// through its directory fd, never through a link: new files with O_EXCL,
// replacements by rename, build directories with random names (mkdtemp).
#pragma once
#include <functional>
#include <string>

#include "ptprof/status.hpp"

namespace ptprof::launcher {

// An exclusive lock on a file of the cache, held for the object's life.
class CacheLock {
 public:
  CacheLock() = default;
  explicit CacheLock(int fd) : fd_(fd) {}
  ~CacheLock();
  CacheLock(CacheLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  CacheLock& operator=(CacheLock&& other) noexcept;
  CacheLock(const CacheLock&) = delete;
  CacheLock& operator=(const CacheLock&) = delete;

 private:
  int fd_ = -1;
};

class CacheDir {
 public:
  // Creates `root` (0700) when missing, then verifies it.
  static Result<CacheDir> open(const std::string& root);
  ~CacheDir();
  CacheDir(CacheDir&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_) { other.fd_ = -1; }
  CacheDir& operator=(CacheDir&&) = delete;
  CacheDir(const CacheDir&) = delete;
  CacheDir& operator=(const CacheDir&) = delete;

  const std::string& path() const { return path_; }
  std::string path_of(const std::string& name) const { return path_ + "/" + name; }

  // Locks `name` (created if missing; refused unless a plain file of this
  // user), waiting at most `timeout_s`; `on_wait` is called once when another
  // process holds it.
  Result<CacheLock> lock(const std::string& name, int timeout_s, const std::function<void()>& on_wait) const;
  bool exists(const std::string& name) const;
  // A small file's text (empty when missing, a link, or unreadable).
  std::string read(const std::string& name) const;
  // Replaces `name` whole: a new file of random name, renamed over it.
  bool write(const std::string& name, const std::string& text) const;
  // A new private directory named `prefix` + 6 random characters.
  Result<std::string> make_work_dir(const std::string& prefix) const;
  // Moves the directory `work` (a name in this root) to `entry`, replacing
  // any entry there in one step; the replaced one is then removed.
  Status publish(const std::string& work, const std::string& entry) const;
  bool rename(const std::string& from, const std::string& to) const;
  void remove(const std::string& name) const;  // a file, or a directory tree
  void unlink(const std::string& name) const;

 private:
  CacheDir(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
};

// Writes a new file at `path` (O_EXCL, never through a link).
bool write_new_file(const std::string& path, const std::string& text);

}  // namespace ptprof::launcher
