#include "runtime.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "log.hpp"
#include "thread_state.hpp"

namespace ptprof::agent {

namespace detail {
constinit thread_local ThreadState* tls_thread = nullptr;
}  // namespace detail

namespace {

// Set when this thread could not get a slot, so it does not retry per event.
thread_local bool tls_unregistrable = false;

int32_t current_tid() { return int32_t(syscall(SYS_gettid)); }

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

void copy_name(char* dst, size_t cap, const char* src) {
  std::strncpy(dst, src, cap - 1);
  dst[cap - 1] = '\0';
}

void on_prepare() { g_runtime.before_fork(); }
void on_parent() { g_runtime.after_fork_parent(); }
void on_child() { g_runtime.after_fork_child(); }
void on_exit() { g_runtime.stop(); }

}  // namespace

Runtime g_runtime;
static_assert(std::is_trivially_destructible_v<Runtime>, "hooks run during static destruction");

namespace {
// Runs after g_runtime is constructed (same translation unit, later).
struct Starter {
  Starter() { g_runtime.start(); }
} g_starter;
}  // namespace

void Runtime::start() {
  const char* session = std::getenv(wire::kSessionEnv);
  if (!session || !*session) return;  // not profiled: stay inert
  set_log_level(std::getenv(env::kLogLevel));

  auto cfg = config_from_env([](const char* n) -> const char* { return std::getenv(n); });
  if (!cfg) {
    for_each_line(cfg.error(), [](std::string_view line) {
      log(Level::Error, "%.*s; profiling is off in this process", int(line.size()), line.data());
    });
    return;
  }
  *config_ = *cfg;
  record_shapes_ = config_->record_shapes;
  profile_memory_ = config_->profile_memory;

  if (!map_session(session)) return;
  if (!create_region()) return;

  pthread_atfork(on_prepare, on_parent, on_child);
  std::atexit(on_exit);
  active_.store(true, std::memory_order_release);

  uint64_t t = clock::ticks_ordered(clock_kind_);
  {
    std::lock_guard lock(step_mu_);
    apply_step(0, t, /*first=*/true);
  }
  log(Level::Debug, "registered in session %s", session);
}

bool Runtime::map_session(const char* name) {
  int fd = ::shm_open(name, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) {
    log(Level::Error, "cannot open session %s: %s; profiling is off in this process", name, std::strerror(errno));
    return false;
  }
  void* p = ::mmap(nullptr, sizeof(wire::SessionHeader), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    log(Level::Error, "cannot map session %s: %s", name, std::strerror(errno));
    return false;
  }
  auto* s = static_cast<wire::SessionHeader*>(p);
  if (s->magic != wire::kSessionMagic || s->version != wire::kWireVersion) {
    log(Level::Error, "session %s has an unknown layout (version %u, agent speaks %u)", name, s->version,
        wire::kWireVersion);
    ::munmap(p, sizeof(wire::SessionHeader));
    return false;
  }
  session_map_ = p;
  session_ = s;
  clock_kind_ = clock::Kind(s->clock_kind);
  return true;
}

bool Runtime::create_region() {
  uint32_t slot_index = session_->next_slot.fetch_add(1, std::memory_order_acq_rel);
  if (slot_index >= wire::kMaxProcesses) {
    session_->lost_processes.fetch_add(1, std::memory_order_relaxed);
    log(Level::Error, "session process table is full; this process is not profiled");
    return false;
  }
  wire::ProcessSlot& slot = session_->slots[slot_index];
  char name[sizeof(wire::ProcessSlot::region) + 16];
  wire::region_name(name, sizeof name, session_->name, slot_index);
  uint64_t ring_bytes = config_->ring_bytes ? config_->ring_bytes : session_->ring_bytes;
  const wire::RegionLayout layout = wire::region_layout(ring_bytes, wire::kMaxThreads);
  size_t bytes = layout.total_bytes;

  int fd = ::shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 || ::ftruncate(fd, off_t(bytes)) != 0) {
    log(Level::Error, "cannot create %s: %s; this process is not profiled", name, std::strerror(errno));
    if (fd >= 0) {
      ::close(fd);
      ::shm_unlink(name);
    }
    session_->lost_processes.fetch_add(1, std::memory_order_relaxed);
    slot.state.store(uint32_t(wire::SlotState::Failed), std::memory_order_release);
    return false;
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    ::shm_unlink(name);
    session_->lost_processes.fetch_add(1, std::memory_order_relaxed);
    slot.state.store(uint32_t(wire::SlotState::Failed), std::memory_order_release);
    return false;
  }
  auto* h = std::construct_at(static_cast<wire::ProcessHeader*>(p));
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

  region_ = p;
  region_bytes_ = bytes;
  header_ = h;
  arena_.emplace(*h, wire::string_arena(p, *h));

  slot.pid = h->pid;
  slot.ppid = h->ppid;
  copy_name(slot.region, sizeof slot.region, name);
  slot.state.store(uint32_t(wire::SlotState::Ready), std::memory_order_release);
  return true;
}

ThreadState* Runtime::register_thread() {
  if (!header_) return nullptr;
  if (tls_unregistrable) {
    // The thread table is full: what this thread records is lost, and counted.
    if (recording()) count_lost_event();
    return nullptr;
  }
  uint32_t index = header_->thread_count.fetch_add(1, std::memory_order_acq_rel);
  if (index >= header_->max_threads) {
    header_->thread_count.fetch_sub(1, std::memory_order_acq_rel);
    header_->lost_threads.fetch_add(1, std::memory_order_relaxed);
    tls_unregistrable = true;
    return nullptr;
  }
  auto state = std::make_unique<ThreadState>();
  ThreadState* t = state.get();
  t->slot = index;
  t->tid = current_tid();
  t->ring = wire::RingWriter(wire::ring_control(region_, *header_, index), wire::ring_data(region_, *header_, index),
                             header_->ring_bytes);
  wire::ThreadSlot& slot = header_->threads[index];
  slot.tid = t->tid;
  char name[16] = {};
  if (pthread_getname_np(pthread_self(), name, sizeof name) == 0) copy_name(slot.name, sizeof slot.name, name);
  slot.state.store(uint32_t(wire::SlotState::Ready), std::memory_order_release);
  {
    std::lock_guard lock(threads_mu_);
    threads_->push_back(std::move(state));
  }
  detail::tls_thread = t;
  return t;
}

void Runtime::rename_thread(ThreadState* t, const char* name) {
  if (!header_ || !t || !name) return;
  copy_name(header_->threads[t->slot].name, sizeof header_->threads[t->slot].name, name);
}

uint32_t Runtime::intern(const char* s, const char** text) {
  if (!header_ || !s) return 0;
  std::string_view name(s, std::min(std::strlen(s), size_t(wire::kMaxNameBytes)));
  std::lock_guard lock(intern_mu_);
  if (auto it = interned_->find(name); it != interned_->end()) {
    *text = it->second.text;
    return it->second.id;
  }
  // A full arena refuses (and counts) the name; the caller's thread caches
  // remember the refusal, so this runs once per thread and name.
  const wire::StringArenaWriter::Entry e = arena_->append(name);
  if (e.id == 0) return 0;
  interned_->emplace(std::string(name), InternedName{e.id, e.text});
  *text = e.text;
  return e.id;
}

void Runtime::publish_boundary(wire::BoundaryKind kind, uint64_t ticks, uint32_t window) {
  uint32_t n = header_->boundary_count.load(std::memory_order_relaxed);
  wire::Boundary& b = header_->boundaries[n % wire::kMaxBoundaries];
  b.ticks = ticks;
  b.kind = uint32_t(kind);
  b.window = window;
  b.step = step_;
  header_->boundary_count.store(n + 1, std::memory_order_release);
}

// Moves the schedule to `step`, which begins at `ticks`. Caller holds step_mu_.
void Runtime::apply_step(uint64_t step, uint64_t ticks, bool first) {
  const StepTransition t = step_transition(config_->schedule, windows_, step_, step, first);
  header_->in_transition.store(1, std::memory_order_seq_cst);
  if (t.end_window) publish_boundary(wire::BoundaryKind::WindowEnd, ticks, windows_.window);
  step_ = step;
  current_step_.store(step, std::memory_order_relaxed);
  // A window open from the start of the region takes everything in it: tick
  // 0, so that no event is lost to a clock read on another core that runs a
  // little behind this one.
  if (t.begin_window) publish_boundary(wire::BoundaryKind::WindowBegin, t.begin_at_zero ? 0 : ticks, t.after.window);
  windows_ = t.after;
  header_->in_transition.store(0, std::memory_order_release);
  memory_recording_.store(profile_memory_ && t.after.in_window, std::memory_order_relaxed);

  bool was = recording_.exchange(t.recording, std::memory_order_relaxed);
  if (t.recording != was) set_bridge_recording(t.recording);
  if (t.recording) {
    if (ThreadState* th = thread_state()) th->write(wire::RecordType::Step, uint32_t(step), ticks);
  }
}

void Runtime::end_step() {
  if (!active()) return;
  std::lock_guard lock(step_mu_);
  uint64_t t = clock::ticks_ordered(clock_kind_);
  apply_step(step_ + 1, t, /*first=*/false);
}

void Runtime::scope_ended(ThreadState& t, const char* name) {
  if (!active()) return;
  if (name && config_->step.ends_step(name)) t.scopes.pending_step_end = true;
  if (t.scopes.pending_step_end && !t.scopes.inside_scope_of(current_step())) {
    t.scopes.pending_step_end = false;
    end_step();
  }
}

uint32_t Runtime::named_step_id() {
  uint32_t id = named_step_id_.load(std::memory_order_relaxed);
  if (id) return id == kNoNamedStepId ? 0 : id;
  const char* text = nullptr;
  id = intern(config_->step.name.c_str(), &text);
  // A name the full arena refused is remembered as such: asked again on
  // every range's end, it would take the intern mutex each time.
  named_step_id_.store(id ? id : kNoNamedStepId, std::memory_order_relaxed);
  return id;
}

void Runtime::set_bridge_recording(bool on) {
  if (bridge_set_recording_) bridge_set_recording_(on ? 1 : 0);
}

void Runtime::count_lost_event() {
  if (header_) header_->lost_thread_events.fetch_add(1, std::memory_order_relaxed);
}

void Runtime::stop() {
  if (!active()) return;
  header_->closed.store(1, std::memory_order_release);
}

void Runtime::before_fork() {
  if (!active()) return;
  step_mu_.lock();
  intern_mu_.lock();
  threads_mu_.lock();
}

void Runtime::after_fork_parent() {
  if (!active()) return;
  threads_mu_.unlock();
  intern_mu_.unlock();
  step_mu_.unlock();
}

void Runtime::after_fork_child() {
  if (!active()) return;
  threads_mu_.unlock();
  intern_mu_.unlock();
  step_mu_.unlock();
  // The parent's rings and arena stay the parent's: leave them alone and
  // start a region of our own. The other threads do not exist here.
  active_.store(false, std::memory_order_release);
  forget_thread_state();
  tls_unregistrable = false;
  threads_->clear();
  interned_->clear();
  arena_.reset();
  named_step_id_.store(0, std::memory_order_relaxed);
  ::munmap(region_, region_bytes_);
  region_ = nullptr;
  header_ = nullptr;
  if (!create_region()) return;
  active_.store(true, std::memory_order_release);
  std::lock_guard lock(step_mu_);
  if (windows_.in_window) {
    // Recording continues in the child: its window starts at the fork.
    uint64_t t = clock::ticks_ordered(clock_kind_);
    header_->in_transition.store(1, std::memory_order_seq_cst);
    publish_boundary(wire::BoundaryKind::WindowBegin, 0, windows_.window);  // everything in the child's region
    header_->in_transition.store(0, std::memory_order_release);
    if (ThreadState* th = thread_state()) th->write(wire::RecordType::Step, uint32_t(step_), t);
  }
}

}  // namespace ptprof::agent
