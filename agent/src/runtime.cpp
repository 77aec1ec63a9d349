#include "runtime.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "cost_calibration.hpp"
#include "log.hpp"
#include "ptprof/bridge_api.h"
#include "thread_state.hpp"

namespace ptprof::agent {

namespace detail {
constinit thread_local ThreadState* tls_thread = nullptr;
}  // namespace detail

namespace {

// Set when this thread could not get a slot or a ring, so it does not retry
// per event.
thread_local bool tls_unregistrable = false;
// Set when this thread's exit has retired its slot: a hook that runs later in
// its exit must not register it again.
thread_local bool tls_exited = false;

// The string arena is reserved in steps as it grows.
constexpr uint64_t kArenaStep = 256u << 10;

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
  h.rank = env_rank("RANK");
  h.local_rank = env_rank("LOCAL_RANK");
  h.world_size = env_rank("WORLD_SIZE");
  if (::gethostname(h.host, sizeof h.host - 1) != 0) h.host[0] = '\0';
  h.host[sizeof h.host - 1] = '\0';
  h.dist_known = 1;
}

// Random bits for a region's name. getrandom() is there on every kernel the
// agent supports; the fallback only keeps names distinct.
uint64_t random_u64() {
  uint64_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) == ssize_t(sizeof r)) return r;
  return clock::monotonic_ns() * 0x9e3779b97f4a7c15ull ^ (uint64_t(getpid()) << 32) ^ uint64_t(current_tid());
}

void on_thread_exit(void* state) { g_runtime.thread_exited(static_cast<ThreadState*>(state)); }

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
  run_options_ = (config_->record_shapes ? wire::kWindowShapes : 0) |
                 (config_->profile_memory ? wire::kWindowMemory : 0) | (config_->with_stack ? wire::kWindowStack : 0);
  window_options_.store(run_options_, std::memory_order_relaxed);
  set_stack_mode(config_->with_stack           ? StackMode::Full
                 : config_->python_attribution ? StackMode::Attribution
                                               : StackMode::Off);
  native_stack_ = config_->native_stack;

  if (!map_session(session)) return;
  thread_key_ok_ = pthread_key_create(&thread_key_, on_thread_exit) == 0;
  if (!create_region()) return;
  record_cost_ps_.store(calibrate_record_cost_ps(), std::memory_order_relaxed);
  header_->record_cost_ps.store(record_cost_ps_.load(std::memory_order_relaxed), std::memory_order_relaxed);

  pthread_atfork(on_prepare, on_parent, on_child);
  std::atexit(on_exit);
  active_.store(true, std::memory_order_release);

  // Under cudaProfilerApi nothing records before the first capture range.
  if (config_->step.kind != StepRule::Kind::CudaProfilerApi) {
    uint64_t t = clock::ticks_ordered(clock_kind_);
    std::lock_guard lock(step_mu_);
    apply_step(0, t, /*first=*/true);
  }
  if (config_->on_demand) start_trigger_watcher();
  check_for_cuda();  // a program linked against CUDA has it loaded already
  log(Level::Debug, "registered in session %s", session);
}

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
  session_fd_ = fd;
  clock_kind_ = clock::Kind(s->clock_kind);
  return true;
}

bool Runtime::launcher_alive() const {
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  // A kernel without OFD locks cannot tell: assume the launcher lives.
  if (::fcntl(session_fd_, F_OFD_GETLK, &lock) != 0) return true;
  return lock.l_type != F_UNLCK;
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
  const size_t prefix = strnlen(session_->name, sizeof session_->name);
  const uint32_t n = std::min(session_->next_slot.load(std::memory_order_acquire), wire::kMaxProcesses);
  for (uint32_t i = 0; i < n; ++i) {
    char name[sizeof(wire::ProcessSlot::region) + 1] = {};
    std::memcpy(name, session_->slots[i].region, sizeof session_->slots[i].region);
    if (std::strncmp(name, session_->name, prefix) == 0 && name[prefix] == '.') ::shm_unlink(name);
  }
}

bool Runtime::reserve_shm(uint64_t offset, uint64_t bytes) const {
  int rc;
  do {
    rc = ::posix_fallocate(region_fd_, off_t(offset), off_t(bytes));
  } while (rc == EINTR);
  // A file system that cannot reserve (not tmpfs) gets the old behaviour.
  return rc == 0 || rc == EOPNOTSUPP || rc == ENOSYS;
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
  uint64_t ring_bytes = config_->ring_bytes ? config_->ring_bytes : session_->ring_bytes;
  const wire::RegionLayout layout = wire::region_layout(ring_bytes, wire::kMaxThreads);
  size_t bytes = layout.total_bytes;

  // A random name, published before the object exists (whoever cleans up
  // finds it), created exclusively: a name someone else took is not ours,
  // try another.
  char name[sizeof(wire::ProcessSlot::region)];
  int fd = -1;
  for (int attempt = 0; attempt < 8 && fd < 0; ++attempt) {
    wire::region_name(name, sizeof name, session_->name, random_u64());
    copy_name(slot.region, sizeof slot.region, name);
    std::atomic_thread_fence(std::memory_order_release);
    fd = ::shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    log(Level::Error, "cannot create %s: %s; this process is not profiled", name, std::strerror(errno));
    fail_region(slot, -1, name, false);
    return false;
  }
  ::fchmod(fd, 0600);  // the umask may have taken the launcher's read-write access
  region_fd_ = fd;
  if (::ftruncate(fd, off_t(bytes)) != 0) {
    log(Level::Error, "cannot size %s: %s; this process is not profiled", name, std::strerror(errno));
    region_fd_ = -1;
    fail_region(slot, fd, name, false);
    return false;
  }
  // The header (thread table, boundaries) is written on the hot path.
  if (!reserve_shm(0, layout.strings_offset)) {
    log(Level::Error, "/dev/shm is full: no room for %s; this process is not profiled", name);
    region_fd_ = -1;
    fail_region(slot, fd, name, true);
    return false;
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    region_fd_ = -1;
    fail_region(slot, fd, name, false);
    return false;
  }
  // The launcher may have died while the name was being made: then the
  // process that cleaned up may not have seen it.
  if (!launcher_alive()) {
    launcher_died();
    ::munmap(p, bytes);
    region_fd_ = -1;
    fail_region(slot, fd, name, false);
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
  read_distributed(*h);
  // A fork child's region says what its parent measured.
  h->record_cost_ps.store(record_cost_ps_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  h->op_cost_ps.store(op_cost_ps_.load(std::memory_order_relaxed), std::memory_order_relaxed);

  region_ = p;
  region_bytes_ = bytes;
  header_ = h;
  arena_reserved_ = 0;
  arena_.emplace(*h, wire::string_arena(p, *h));

  slot.pid = h->pid;
  slot.ppid = h->ppid;
  slot.state.store(uint32_t(wire::SlotState::Ready), std::memory_order_release);
  return true;
}

// A slot for a new thread: one the launcher has released (an exited
// thread's, drained) or one never used. Caller holds threads_mu_.
uint32_t Runtime::claim_thread_slot() {
  const uint32_t used = header_->thread_count.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < used; ++i)
    if (header_->threads[i].state.load(std::memory_order_acquire) == uint32_t(wire::SlotState::Free)) return i;
  if (used >= header_->max_threads) return UINT32_MAX;
  header_->thread_count.store(used + 1, std::memory_order_release);
  return used;
}

// The ring of `slot`, reserved in /dev/shm: the session's size, or a quarter,
// a sixteenth... down to kMinRingBytes when /dev/shm is short; 0 when not
// even that fits. A slot keeps its ring for the threads that reuse it.
// Caller holds threads_mu_.
uint64_t Runtime::reserve_ring(uint32_t slot) {
  if (ring_bytes_->size() <= slot) ring_bytes_->resize(slot + 1, 0);
  uint64_t& reserved = (*ring_bytes_)[slot];
  if (reserved) return reserved;
  const uint64_t offset = uint64_t(reinterpret_cast<uint8_t*>(wire::ring_control(region_, *header_, slot)) -
                                   static_cast<uint8_t*>(region_));
  for (uint64_t size = header_->ring_bytes;; size = std::max(size / 4, wire::kMinRingBytes)) {
    if (reserve_shm(offset, sizeof(wire::RingControl) + size)) {
      if (size < header_->ring_bytes) header_->shm_small_rings.fetch_add(1, std::memory_order_relaxed);
      return reserved = size;
    }
    if (size <= wire::kMinRingBytes) return 0;
  }
}

// The string arena reserved up to byte `upto`. Caller holds intern_mu_.
bool Runtime::reserve_arena(uint64_t upto) {
  if (upto <= arena_reserved_ || upto > header_->strings_capacity) return true;  // a full arena refuses by itself
  const uint64_t want = std::min(header_->strings_capacity, (upto + kArenaStep - 1) / kArenaStep * kArenaStep);
  if (!reserve_shm(header_->strings_offset + arena_reserved_, want - arena_reserved_)) return false;
  arena_reserved_ = want;
  return true;
}

ThreadState* Runtime::register_thread() {
  if (!header_ || tls_unregistrable || tls_exited) return nullptr;
  std::lock_guard lock(threads_mu_);
  if (!launcher_alive()) {
    launcher_died();
    tls_unregistrable = true;
    return nullptr;
  }
  const uint32_t index = claim_thread_slot();
  if (index == UINT32_MAX) {
    header_->lost_threads.fetch_add(1, std::memory_order_relaxed);
    tls_unregistrable = true;
    return nullptr;
  }
  const uint64_t ring_bytes = reserve_ring(index);
  if (ring_bytes == 0) {
    // The slot stays free: a later thread may find /dev/shm less full.
    header_->shm_short_threads.fetch_add(1, std::memory_order_relaxed);
    tls_unregistrable = true;
    return nullptr;
  }
  auto state = std::make_unique<ThreadState>();
  ThreadState* t = state.get();
  t->slot = index;
  t->tid = current_tid();
  t->ring = wire::RingWriter(wire::ring_control(region_, *header_, index), wire::ring_data(region_, *header_, index),
                             ring_bytes);
  wire::ThreadSlot& slot = header_->threads[index];
  slot.tid = t->tid;
  slot.ring_bytes = ring_bytes;
  std::memset(slot.name, 0, sizeof slot.name);
  char name[16] = {};
  if (pthread_getname_np(pthread_self(), name, sizeof name) == 0) copy_name(slot.name, sizeof slot.name, name);
  slot.state.store(uint32_t(wire::SlotState::Ready), std::memory_order_release);
  // The slot's previous thread has exited and the launcher is done with it.
  if (threads_->size() <= index) threads_->resize(index + 1);
  (*threads_)[index] = std::move(state);
  detail::tls_thread = t;
  if (thread_key_ok_) pthread_setspecific(thread_key_, t);
  return t;
}

void Runtime::thread_exited(ThreadState* t) {
  // A fork child's copy of its parent's value, or a region that is gone.
  if (!t || t != detail::tls_thread || !header_) return;
  detail::tls_thread = nullptr;
  tls_exited = true;
  // Last: from here on the launcher may release the slot to a new thread.
  header_->threads[t->slot].state.store(uint32_t(wire::SlotState::Retired), std::memory_order_release);
}

void Runtime::note_unrecorded_event() {
  if (tls_unregistrable && recording()) count_lost_event();
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
  const uint64_t at = header_->strings_committed.load(std::memory_order_relaxed);
  if (!reserve_arena(at + wire::arena_entry_bytes(name.size()))) {
    header_->strings_dropped.fetch_add(1, std::memory_order_relaxed);
    header_->shm_short_names.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
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
std::optional<uint32_t> Runtime::apply_step(uint64_t step, uint64_t ticks, bool first) {
  const StepTransition t = config_->on_demand ? on_demand_transition(first)
                                              : step_transition(config_->schedule, windows_, step_, step, first);
  return apply_transition(t, ticks, step);
}

std::optional<uint32_t> Runtime::apply_transition(const StepTransition& t, uint64_t ticks,
                                                  std::optional<uint64_t> step) {
  std::optional<uint32_t> ended;
  header_->in_transition.store(1, std::memory_order_seq_cst);
  if (t.end_window) {
    publish_boundary(wire::BoundaryKind::WindowEnd, ticks, windows_.window);
    ended = windows_.window;
  }
  if (step) {
    step_ = *step;
    current_step_.store(*step, std::memory_order_relaxed);
  }
  // A window open from the start of the region takes everything in it: tick
  // 0, so that no event is lost to a clock read on another core that runs a
  // little behind this one.
  if (t.begin_window) publish_boundary(wire::BoundaryKind::WindowBegin, t.begin_at_zero ? 0 : ticks, t.after.window);
  windows_ = t.after;
  header_->in_transition.store(0, std::memory_order_release);
  memory_recording_.store(t.after.in_window && profile_memory(), std::memory_order_relaxed);

  bool was = recording_.exchange(t.recording, std::memory_order_relaxed);
  set_bridge_recording(t.recording);  // also when only the window's options changed
  if (t.recording != was) cupti_->recording_changed(t.recording);
  // A window that opens inside a step (by time) has no ProfilerStep span for
  // that step: it would hold only the step's tail.
  if (t.recording && step) {
    if (ThreadState* th = thread_state()) th->emit_instant(wire::RecordType::Step, uint32_t(*step), ticks);
  }
  return ended;
}

void Runtime::notify_window_end(std::optional<uint32_t> window) {
  if (!window) return;
  if (WindowEndListener fn = window_end_listener_.load(std::memory_order_acquire)) fn(*window);
}

void Runtime::end_step() {
  // Under cudaProfilerApi only cudaProfilerStart/Stop move the steps.
  if (!active() || config_->step.kind == StepRule::Kind::CudaProfilerApi) return;
  // The step's completed GPU buffers, outside the step lock: the window's
  // end waits for the rest (CuptiConsumer::window_ended); this spreads the
  // conversion over the window's steps.
  if (cupti_->correlating()) cupti_->flush();
  std::optional<uint32_t> ended;
  {
    std::lock_guard lock(step_mu_);
    uint64_t t = clock::ticks_ordered(clock_kind_);
    ended = apply_step(step_ + 1, t, /*first=*/false);
  }
  notify_window_end(ended);
}

// Capture range k is step k. Without a schedule each capture range is a
// window of its own (as nsys writes one report per range); with one, the
// schedule groups them. A window ends at the Stop of its last step, so the
// steps inside a window run from one Start to the next.
void Runtime::cuda_profiler_api(bool start) {
  if (!active() || config_->step.kind != StepRule::Kind::CudaProfilerApi) return;
  if (cupti_->correlating()) cupti_->flush();
  std::optional<uint32_t> ended;
  {
    std::lock_guard lock(step_mu_);
    ended = move_capture(start);
  }
  notify_window_end(ended);
}

// cuda_profiler_api's transition; caller holds step_mu_.
std::optional<uint32_t> Runtime::move_capture(bool start) {
  std::optional<uint32_t> ended;
  if (start == capturing_) return ended;  // a Start inside a range, a Stop outside one
  capturing_ = start;
  Schedule schedule = config_->schedule;
  if (!schedule.enabled) schedule = Schedule{.enabled = true};  // active=1: every range RecordAndSave
  uint64_t t = clock::ticks_ordered(clock_kind_);
  bool recording = false;
  header_->in_transition.store(1, std::memory_order_seq_cst);
  if (start) {
    step_ = captures_++;
    current_step_.store(step_, std::memory_order_relaxed);
    const StepAction action = schedule.action(step_);
    if (!windows_.in_window && Schedule::records(action)) {
      publish_boundary(wire::BoundaryKind::WindowBegin, t, windows_.window);
      windows_.in_window = true;
    }
    recording = action != StepAction::None;
  } else if (windows_.in_window && (schedule.action(step_) != StepAction::Record || schedule.finished_after(step_))) {
    publish_boundary(wire::BoundaryKind::WindowEnd, t, windows_.window);
    ended = windows_.window;
    windows_.in_window = false;
    ++windows_.window;
  }
  header_->in_transition.store(0, std::memory_order_release);
  recording_.store(recording, std::memory_order_relaxed);
  set_bridge_recording(recording);
  if (recording) {
    if (ThreadState* th = thread_state()) th->emit_instant(wire::RecordType::Step, uint32_t(step_), t);
  }
  return ended;
}

void Runtime::set_gpu_flush_protocol(bool on) {
  if (header_) header_->gpu_flush.store(on ? 1 : 0, std::memory_order_release);
}

void Runtime::gpu_flushed(uint32_t window) {
  if (!active()) return;
  std::lock_guard lock(step_mu_);
  header_->in_transition.store(1, std::memory_order_seq_cst);
  publish_boundary(wire::BoundaryKind::GpuFlushed, clock::ticks_ordered(clock_kind_), window);
  header_->in_transition.store(0, std::memory_order_release);
}

void Runtime::scope_ended(ThreadState& t, const char* name) {
  if (!active()) return;
  if (t.take_step_end(name && config_->step.ends_step(name), current_step())) end_step();
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

int Runtime::bridge_mode(bool recording) const {
  if (!recording) return 0;
  return PTPROF_BRIDGE_OPS | (record_shapes() ? PTPROF_BRIDGE_SHAPES : 0) |
         (profile_memory() ? PTPROF_BRIDGE_MEMORY : 0);
}

// Caller holds step_mu_ (or is the bridge's loader, before anyone else can
// call the switch). Calls the bridge only when the mode changes.
void Runtime::set_bridge_recording(bool on) {
  const int mode = bridge_mode(on);
  if (!bridge_set_recording_ || mode == bridge_mode_) return;
  bridge_mode_ = mode;
  bridge_set_recording_(mode);
}

uint32_t Runtime::publish_cuda_status(wire::CudaStatus s, bool yielded, const char* message) {
  if (!header_) return 0;
  const char* text = nullptr;
  uint32_t id = intern(message, &text);
  header_->cuda_status.store(wire::pack_cuda_status(s, yielded, id), std::memory_order_release);
  return id;
}

void Runtime::count_lost_event() {
  if (header_) header_->lost_thread_events.fetch_add(1, std::memory_order_relaxed);
}

void Runtime::stop() {
  if (!active()) return;
  // The window still open ends with the process: the listener (the CUPTI
  // consumer) synchronizes and flushes what is in flight before the launcher
  // sees `closed`; CUPTI is let go after it.
  std::optional<uint32_t> open;
  {
    std::lock_guard lock(step_mu_);
    stopped_ = true;
    if (windows_.in_window) open = windows_.window;
  }
  notify_window_end(open);
  cupti_->shutdown();
  header_->closed.store(1, std::memory_order_release);
  // A target that outlived a killed launcher and forks no more: its exit
  // is the last chance to remove the session's objects.
  if (!launcher_alive()) launcher_died();
}

void Runtime::before_fork() {
  if (!active()) return;
  step_mu_.lock();
  native_->lock_for_fork();
  intern_mu_.lock();
  threads_mu_.lock();
}

void Runtime::after_fork_parent() {
  if (!active()) return;
  threads_mu_.unlock();
  intern_mu_.unlock();
  native_->unlock_after_fork(/*child=*/false);
  step_mu_.unlock();
}

void Runtime::after_fork_child() {
  if (!active()) return;
  threads_mu_.unlock();
  intern_mu_.unlock();
  native_->unlock_after_fork(/*child=*/true);
  step_mu_.unlock();
  // The parent's rings and arena stay the parent's: leave them alone and
  // start a region of our own. The other threads do not exist here.
  active_.store(false, std::memory_order_release);
  cupti_->forget_after_fork();
  forget_thread_state();
  if (thread_key_ok_) pthread_setspecific(thread_key_, nullptr);
  tls_unregistrable = false;
  tls_exited = false;
  threads_->clear();
  ring_bytes_->clear();
  interned_->clear();
  arena_.reset();
  named_step_id_.store(0, std::memory_order_relaxed);
  ::munmap(region_, region_bytes_);
  ::close(region_fd_);
  region_ = nullptr;
  region_fd_ = -1;
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
    if (ThreadState* th = thread_state()) th->emit_instant(wire::RecordType::Step, uint32_t(step_), t);
  }
  if (config_->on_demand) start_trigger_watcher();  // the parent's is not in this process
}

void Runtime::publish_op_cost(uint32_t ps) {
  op_cost_ps_.store(ps, std::memory_order_relaxed);
  if (header_) header_->op_cost_ps.store(ps, std::memory_order_relaxed);
}

}  // namespace ptprof::agent
