// The launcher's side of a session: creates the shared-memory session object
// (mode 0600, unguessable name, its pages reserved), holds a lock on it for
// as long as the launcher lives (agents check it), and removes it when
// destroyed.
#pragma once
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ptprof/clock.hpp"
#include "ptprof/shm_abi.hpp"
#include "ptprof/status.hpp"

namespace ptprof::launcher {

class Session {
 public:
  static Result<std::unique_ptr<Session>> create(uint64_t ring_bytes, clock::Kind clock);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::string& name() const { return name_; }
  wire::SessionHeader* header() const { return header_; }
  // Removes the name now (the mapping stays valid); later registrations fail.
  void unlink();

 private:
  struct Private {};

 public:
  explicit Session(Private) {}

 private:
  std::string name_;
  wire::SessionHeader* header_ = nullptr;
  int fd_ = -1;  // holds the lock that tells agents the launcher lives
  bool linked_ = false;
};

// Opens and maps a process region by name, read-write (the launcher moves
// each ring's tail). The name is removed at once: both sides keep their
// mappings, and nothing is left in /dev/shm if either side dies.
//
// A slot's name is written by the target, so it is checked before anything
// is opened or removed: it must be a region name of `session`
// (wire::is_region_of), and the object a regular file owned by `owner` (the
// launcher's effective uid; a parameter for tests), else it is refused; a
// refused object of the session's own namespace is still unlinked.
struct RegionMapping {
  void* base = nullptr;
  size_t bytes = 0;
  ~RegionMapping();
  RegionMapping() = default;
  RegionMapping(const RegionMapping&) = delete;
  RegionMapping& operator=(const RegionMapping&) = delete;
  wire::ProcessHeader* header() const { return static_cast<wire::ProcessHeader*>(base); }
};
Result<std::unique_ptr<RegionMapping>> map_region(const char* name, std::string_view session,
                                                  uid_t owner = ::geteuid());

}  // namespace ptprof::launcher
