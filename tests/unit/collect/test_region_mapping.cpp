// What the launcher opens when a slot announces a process region
// (launcher/collect/session.cpp, map_region): only a name of its own session, only an
// object its own user owns. A slot's name is written by the target, which may
// have dropped its privileges (docs/security.md).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "collect/session.hpp"
#include "ptprof/shm_abi.hpp"

using namespace ptprof;

namespace {

constexpr uint64_t kRingBytes = 4096;

std::string session_name() { return "/ptprof-unit" + std::to_string(::getpid()) + "0123456789abcdef0123456789"; }

std::string region_of(const std::string& session, uint64_t random) {
  char name[sizeof(wire::ProcessSlot::region)];
  wire::region_name(name, sizeof name, session.c_str(), random);
  return name;
}

bool exists(const std::string& name) {
  const int fd = ::shm_open(name.c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

// A region as an agent creates it: one thread, the smallest ring, the
// header's layout as the launcher expects. Removed at the end of the test if
// map_region left it.
class ShmRegion {
 public:
  explicit ShmRegion(std::string name) : name_(std::move(name)) {
    ::shm_unlink(name_.c_str());
    fd_ = ::shm_open(name_.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    REQUIRE(fd_ >= 0);
    const wire::RegionLayout layout = wire::region_layout(kRingBytes, 1);
    REQUIRE(::ftruncate(fd_, off_t(layout.total_bytes)) == 0);
    void* p = ::mmap(nullptr, sizeof(wire::ProcessHeader), PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    REQUIRE(p != MAP_FAILED);
    auto* h = std::construct_at(static_cast<wire::ProcessHeader*>(p));
    h->magic = wire::kProcessMagic;
    h->version = wire::kWireVersion;
    h->pid = ::getpid();
    h->max_threads = 1;
    h->ring_bytes = kRingBytes;
    h->strings_offset = layout.strings_offset;
    h->strings_capacity = layout.strings_capacity;
    h->rings_offset = layout.rings_offset;
    ::munmap(p, sizeof(wire::ProcessHeader));
  }
  ~ShmRegion() {
    ::close(fd_);
    ::shm_unlink(name_.c_str());
  }
  ShmRegion(const ShmRegion&) = delete;
  ShmRegion& operator=(const ShmRegion&) = delete;
  const std::string& name() const { return name_; }
  int fd() const { return fd_; }

 private:
  std::string name_;
  int fd_ = -1;
};

}  // namespace

TEST_CASE("region names: exactly <session>.<16 lowercase hex digits>", "[session][security]") {
  const std::string s = "/ptprof-00112233445566778899aabbccddeeff";
  CHECK(wire::is_region_of(region_of(s, 0x0123456789abcdefull), s));
  CHECK(wire::is_region_of(s + ".0000000000000000", s));
  CHECK_FALSE(wire::is_region_of(s + ".0123456789ABCDEF", s));   // upper case: not what the agent writes
  CHECK_FALSE(wire::is_region_of(s + ".0123456789abcde", s));    // 15 digits
  CHECK_FALSE(wire::is_region_of(s + ".0123456789abcdef0", s));  // 17
  CHECK_FALSE(wire::is_region_of(s + "-0123456789abcdef", s));   // no dot
  CHECK_FALSE(wire::is_region_of(s + ".0123456789abcde/", s));   // a slash
  CHECK_FALSE(wire::is_region_of("/ptprof-ffffffffffffffffffffffffffffffff.0123456789abcdef", s));  // another session
  CHECK_FALSE(wire::is_region_of("/some-other-object", s));
  CHECK_FALSE(wire::is_region_of("", s));
  CHECK_FALSE(wire::is_region_of(".0123456789abcdef", ""));  // no session: nothing is its region
  // A session name longer than the agent keeps: names use its first 40 characters.
  const std::string long_session = s + "-and-more";
  CHECK(wire::is_region_of(region_of(long_session, 7), long_session));
}

TEST_CASE("map_region opens a region of its own session and owner, and removes its name", "[session][security]") {
  const std::string session = session_name();
  ShmRegion r(region_of(session, 0xfeedull));
  auto m = launcher::map_region(r.name().c_str(), session);
  INFO(m.error());
  REQUIRE(m.ok());
  CHECK((*m)->header()->pid == ::getpid());
  CHECK_FALSE(exists(r.name()));
}

TEST_CASE("map_region neither opens nor removes a name outside its session", "[session][security]") {
  const std::string session = session_name();
  // An object of someone else's (here, ours under another name) that a slot
  // announces: a target that dropped privileges could write any name there.
  ShmRegion decoy("/ptprof-decoy-" + std::to_string(::getpid()));
  auto m = launcher::map_region(decoy.name().c_str(), session);
  REQUIRE_FALSE(m.ok());
  CHECK_THAT(m.error(), Catch::Contains("is not one of session"));
  CHECK(exists(decoy.name()));  // left alone
  // The same, as another session's region.
  ShmRegion other(region_of("/ptprof-ffffffffffffffffffffffffffffffff", 1));
  REQUIRE_FALSE(launcher::map_region(other.name().c_str(), session).ok());
  CHECK(exists(other.name()));
}

TEST_CASE("map_region refuses a region another user owns", "[session][security]") {
  const std::string session = session_name();
  {
    // The owner compared is the launcher's effective uid; as another uid
    // the same object is someone else's.
    ShmRegion r(region_of(session, 0xbeefull));
    auto m = launcher::map_region(r.name().c_str(), session, ::geteuid() + 1);
    REQUIRE_FALSE(m.ok());
    CHECK_THAT(m.error(), Catch::Contains("is owned by uid " + std::to_string(::geteuid())));
    CHECK_FALSE(exists(r.name()));  // a name of the session's own: removed all the same
  }
  if (::geteuid() == 0) {
    // As root, an object that really belongs to another user.
    ShmRegion r(region_of(session, 0xcafeull));
    REQUIRE(::fchown(r.fd(), 65534, 65534) == 0);
    auto m = launcher::map_region(r.name().c_str(), session);
    REQUIRE_FALSE(m.ok());
    CHECK_THAT(m.error(), Catch::Contains("is owned by uid 65534"));
  }
}
