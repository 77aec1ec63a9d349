// The runtime's shared memory: the session the launcher created (checked
// before use), and this process's region in it, created under a fresh name
// that the session's process slot announces. Also how the agent notices
// that the launcher died, and cleans up after it.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "base/log.hpp"
#include "ptprof/session_lock.hpp"
#include "runtime/runtime.hpp"

namespace ptprof::agent {
namespace {

void read_cmdline(char* out, size_t cap) {
  int fd = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n = ::read(fd, out, cap - 1);
  ::close(fd);
  if (n <= 0) return;
  for (ssize_t i = 0; i < n; ++i)
    if (out[i] == '\0') out[i] = ' ';
  while (n > 0 && out[n - 1] == ' ') --n;
  out[n] = '\0';
}

// A rank variable of the environment: a decimal that fits int32, else -1
// (unset, or something a launcher other than torchrun put there).
int32_t env_rank(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return -1;
  int64_t n = 0;
  for (const char* p = v; *p; ++p) {
    if (*p < '0' || *p > '9' || n > INT32_MAX / 10) return -1;
    n = n * 10 + (*p - '0');
  }
  return n > INT32_MAX ? -1 : int32_t(n);
}

// Read at every registration, a fork child's included: a parent may set RANK
// in its environment (os.environ) before it starts its ranks by fork.
void read_distributed(wire::ProcessHeader& h) {
  h.rank.store(env_rank("RANK"), std::memory_order_relaxed);
  h.local_rank.store(env_rank("LOCAL_RANK"), std::memory_order_relaxed);
  h.world_size.store(env_rank("WORLD_SIZE"), std::memory_order_relaxed);
  if (::gethostname(h.host, sizeof h.host - 1) != 0) h.host[0] = '\0';
  h.host[sizeof h.host - 1] = '\0';
  h.dist_known = 1;
}

// Random bits for a region's name. getrandom() is there on every kernel the
// agent supports; the fallback only keeps names distinct.
uint64_t random_u64() {
  uint64_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) == ssize_t(sizeof r)) return r;
  return clock::monotonic_ns() * 0x9e3779b97f4a7c15ull ^ (uint64_t(getpid()) << 32) ^ uint64_t(syscall(SYS_gettid));
}

}  // namespace

bool Runtime::map_session(const char* name) {
  int fd = ::shm_open(name, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) {
    log(Level::Error, "cannot open session %s: %s; profiling is off in this process", name, std::strerror(errno));
    return false;
  }
  // Anyone can create an object of that name: map no more than it holds (an
  // access past its end is a SIGBUS) and use nothing it says unchecked.
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || uint64_t(st.st_size) < sizeof(wire::SessionHeader)) {
    log(Level::Error, "session %s is not a ptprof session (%lld bytes); profiling is off in this process", name,
        static_cast<long long>(st.st_size));
    ::close(fd);
    return false;
  }
  void* p = ::mmap(nullptr, sizeof(wire::SessionHeader), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    log(Level::Error, "cannot map session %s: %s", name, std::strerror(errno));
    ::close(fd);
    return false;
  }
  auto* s = static_cast<wire::SessionHeader*>(p);
  if (!wire::session_header_valid(*s, uint64_t(st.st_size)) || std::strncmp(s->name, name, sizeof s->name) != 0) {
    log(Level::Error,
        "session %s has an unknown layout or invalid fields (version %u, agent speaks %u); "
        "profiling is off in this process",
        name, s->version, wire::kWireVersion);
    ::munmap(p, sizeof(wire::SessionHeader));
    ::close(fd);
    return false;
  }
  session_map_ = p;
  session_ = s;
  std::memcpy(session_name_, s->name, sizeof s->name);
  session_dev_ = st.st_dev;
  session_ino_ = st.st_ino;
  ::close(fd);
  clock_kind_ = clock::Kind(s->clock_kind);
  return true;
}

bool Runtime::same_session(int fd) const {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && st.st_dev == session_dev_ && st.st_ino == session_ino_;
}

// Whether this process's /dev/shm is the one the session lies in. A process
// that moved into a mount namespace of its own (a sandbox) may have another:
// there a missing name says nothing about the launcher, which is then taken
// as alive rather than declared gone for the whole run.
bool Runtime::sees_session_shm() const {
  struct stat st {};
  return ::stat("/dev/shm", &st) == 0 && st.st_dev == session_dev_;
}

// The session's object, opened again by name for the test of the launcher's
// lock: the launcher removes the name when it ends, so a name that is gone or
// names another object means that no one drains this session any more. A
// process out of descriptors cannot tell, and assumes the launcher alive.
bool Runtime::launcher_alive() const {
  const int fd = ::shm_open(session_name_, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) return errno != ENOENT || !sees_session_shm();
  const bool alive = same_session(fd) && wire::session_lock_held(fd);
  ::close(fd);
  return alive;
}

// The launcher died (SIGKILL): no one will drain or remove what this session
// created. The first agent to notice removes the session's name and every
// region name published in its slots (processes keep their mappings); the
// agents that notice later find the flag set. A process that registers while
// this runs checks again after creating its region (create_region).
void Runtime::launcher_died() {
  uint32_t expected = 0;
  if (!session_->launcher_gone.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) return;
  log(Level::Warn, "the launcher of session %s is gone; this process and its children are not profiled",
      session_->name);
  ::shm_unlink(session_->name);
  const std::string_view session(session_->name, strnlen(session_->name, sizeof session_->name));
  const uint32_t n = std::min(session_->next_slot.load(std::memory_order_acquire), wire::kMaxProcesses);
  for (uint32_t i = 0; i < n; ++i) {
    char name[sizeof(wire::ProcessSlot::region) + 1] = {};
    std::memcpy(name, session_->slots[i].region, sizeof session_->slots[i].region);
    if (wire::is_region_of(name, session)) ::shm_unlink(name);
  }
}

void Runtime::fail_region(wire::ProcessSlot& slot, int fd, const char* name, bool shm_short) {
  if (fd >= 0) {
    ::close(fd);
    ::shm_unlink(name);
  }
  if (shm_short) session_->shm_short_processes.fetch_add(1, std::memory_order_relaxed);
  session_->lost_processes.fetch_add(1, std::memory_order_relaxed);
  slot.state.store(uint32_t(wire::SlotState::Failed), std::memory_order_release);
}

void* Runtime::open_region(wire::ProcessSlot& slot, const wire::RegionLayout& layout) {
  // A random name, published before the object exists (whoever cleans up
  // finds it), created exclusively: a name someone else took is not ours,
  // try another.
  char name[sizeof(wire::ProcessSlot::region)];
  int fd = -1;
  for (int attempt = 0; attempt < 8 && fd < 0; ++attempt) {
    wire::region_name(slot.region, sizeof slot.region, session_->name, random_u64());
    std::memcpy(name, slot.region, sizeof name);
    std::atomic_thread_fence(std::memory_order_release);
    fd = ::shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    log(Level::Error, "cannot create %s: %s; this process is not profiled", name, std::strerror(errno));
    fail_region(slot, -1, name, false);
    return nullptr;
  }
  ::fchmod(fd, 0600);  // the umask may have taken the launcher's read-write access
  const size_t bytes = layout.total_bytes;
  void* p = MAP_FAILED;
  bool shm_short = false;
  if (::ftruncate(fd, off_t(bytes)) != 0) {
    log(Level::Error, "cannot size %s: %s; this process is not profiled", name, std::strerror(errno));
  } else if (p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0); p == MAP_FAILED) {
    log(Level::Error, "cannot map %s: %s; this process is not profiled", name, std::strerror(errno));
  } else if (!reservation_.attach(fd, p, bytes, layout.strings_offset)) {
    // The header (thread table, boundaries) is written on the hot path.
    log(Level::Error, "/dev/shm is full: no room for %s; this process is not profiled", name);
    ::munmap(p, bytes);
    p = MAP_FAILED;
    shm_short = true;
  } else {
    fd = -1;  // the reservation's now (closed, or kept and checked before each use)
  }
  // The launcher may have died while the name was being made: then the
  // process that cleaned up may not have seen it.
  if (p != MAP_FAILED && !launcher_alive()) {
    launcher_died();
    ::munmap(p, bytes);
    reservation_.release();
    ::shm_unlink(name);
    p = MAP_FAILED;
  }
  if (p == MAP_FAILED) {
    fail_region(slot, fd, name, shm_short);
    return nullptr;
  }
  return p;
}

wire::ProcessHeader* Runtime::init_region_header(void* region, uint64_t ring_bytes, const wire::RegionLayout& layout) {
  auto* h = std::construct_at(static_cast<wire::ProcessHeader*>(region));
  h->magic = wire::kProcessMagic;
  h->version = wire::kWireVersion;
  h->pid = getpid();
  h->ppid = getppid();
  h->max_threads = wire::kMaxThreads;
  h->ring_bytes = ring_bytes;
  h->strings_offset = layout.strings_offset;
  h->strings_capacity = layout.strings_capacity;
  h->rings_offset = layout.rings_offset;
  h->start_realtime_ns = clock::realtime_ns();
  h->start_monotonic_ns = clock::monotonic_ns();
  read_cmdline(h->cmdline, sizeof h->cmdline);
  read_distributed(*h);
  role_ = role_at_registration(h->cmdline, role_);
  h->role_index.store(role_.index, std::memory_order_relaxed);
  h->role.store(uint32_t(role_.role), std::memory_order_release);
  // A fork child's region says what its parent measured.
  h->record_cost_ps.store(record_cost_ps_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  h->op_cost_ps.store(op_cost_ps_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  return h;
}

bool Runtime::create_region() {
  if (!launcher_alive()) {
    launcher_died();
    return false;
  }
  uint32_t slot_index = session_->next_slot.fetch_add(1, std::memory_order_acq_rel);
  if (slot_index >= wire::kMaxProcesses) {
    session_->lost_processes.fetch_add(1, std::memory_order_relaxed);
    log(Level::Error, "session process table is full; this process is not profiled");
    return false;
  }
  wire::ProcessSlot& slot = session_->slots[slot_index];
  const uint64_t ring_bytes = config_->ring_bytes ? config_->ring_bytes : session_->ring_bytes;
  const uint64_t names_bytes = config_->names_bytes ? config_->names_bytes : wire::kStringArenaBytes;
  const wire::RegionLayout layout = wire::region_layout(ring_bytes, wire::kMaxThreads, names_bytes);
  void* p = open_region(slot, layout);
  if (!p) return false;
  wire::ProcessHeader* h = init_region_header(p, ring_bytes, layout);
  region_ = p;
  region_bytes_ = layout.total_bytes;
  header_ = h;
  arena_reserved_ = 0;
  arena_.emplace(*h, wire::string_arena(p, *h));
  slot_ = &slot;
  windows_.attach(*session_, slot, *h, clock_kind_);

  slot.pid = h->pid;
  slot.ppid = h->ppid;
  slot.state.store(uint32_t(wire::SlotState::Ready), std::memory_order_release);
  return true;
}

}  // namespace ptprof::agent
