#include "runtime/runtime.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "base/log.hpp"
#include "record/cost_calibration.hpp"
#include "record/thread_state.hpp"
#include "window/ancestor_slot.hpp"

namespace ptprof::agent {

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

void copy_name(char* dst, size_t cap, const char* src) {
  std::strncpy(dst, src, cap - 1);
  dst[cap - 1] = '\0';
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
  windows_.configure(*config_, *cupti_);
  set_stack_mode(config_->with_stack           ? StackMode::Full
                 : config_->python_attribution ? StackMode::Attribution
                                               : StackMode::Off);
  native_stack_ = config_->native_stack;

  if (!map_session(session)) return;
  cupti_->configure(
      windows_,
      [](wire::CudaStatus s, bool yielded, const char* message) {
        return g_runtime.publish_cuda_status(s, yielded, message);
      },
      clock_kind_);
  thread_key_ok_ = pthread_key_create(&thread_key_, on_thread_exit) == 0;
  if (!create_region()) return;
  record_cost_ps_.store(calibrate_record_cost_ps(clock_kind_), std::memory_order_relaxed);
  header_->record_cost_ps.store(record_cost_ps_.load(std::memory_order_relaxed), std::memory_order_relaxed);

  pthread_atfork(on_prepare, on_parent, on_child);
  std::atexit(on_exit);
  active_.store(true, std::memory_order_release);
  find_ancestor();
  windows_.begin();
  check_for_cuda();  // a program linked against CUDA has it loaded already
  log(Level::Debug, "registered in session %s", session);
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
  t->clock = clock_kind_;
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

void Runtime::scope_ended(ThreadState& t, const char* name) {
  if (!active()) return;
  // The step-ending scopes the bootstrap reports are counted once, from it;
  // their end here only releases a step end it held back.
  const bool reported = name && python_steps_.load(std::memory_order_acquire) &&
                        (StepRule::is_optimizer_step(name) || StepRule::is_dataloader_next(name));
  if (t.take_step_end(name && !reported && step_ends_at(name), current_step())) end_step();
}

bool Runtime::python_reports_steps() {
  if (!active()) return false;
  switch (config_->step.kind) {
    case StepRule::Kind::Optimizer:
    case StepRule::Kind::DataLoader:
    case StepRule::Kind::Auto:
    case StepRule::Kind::Forward:
      break;
    default:  // the user scopes (or ranges, or calls) that end steps are seen only by the bridge
      return false;
  }
  python_steps_.store(true, std::memory_order_release);
  windows_.set_scopes_wanted(false);
  return true;
}

void Runtime::op_ended(ThreadState& t, const char* name) {
  if (!active() || !name || config_->step.name != name) return;
  header_->step_candidates[wire::kStepCandidateNamed].fetch_add(1, std::memory_order_relaxed);
  if (t.take_step_end(true, current_step())) end_step();
}

bool Runtime::step_ends_at(std::string_view name, uint32_t times) {
  const StepRule& rule = config_->step;
  const bool optimizer = StepRule::is_optimizer_step(name);
  const bool batch = !optimizer && StepRule::is_dataloader_next(name);
  if (optimizer) header_->step_candidates[wire::kStepCandidateOptimizer].fetch_add(times, std::memory_order_relaxed);
  if (batch) header_->step_candidates[wire::kStepCandidateDataLoader].fetch_add(times, std::memory_order_relaxed);
  if (rule.kind == StepRule::Kind::Auto) {
    if (optimizer) return auto_chooses(StepRule::Kind::Optimizer);
    if (batch) return auto_chooses(StepRule::Kind::DataLoader);
    return false;
  }
  const bool ends = rule.ends_step(name);
  if (ends && rule.kind == StepRule::Kind::Named)
    header_->step_candidates[wire::kStepCandidateNamed].fetch_add(times, std::memory_order_relaxed);
  return ends;
}

bool Runtime::auto_chooses(StepRule::Kind kind) {
  // The optimizer, once one steps; until then the first of the DataLoader's
  // batches and the model's forward that ends a step keeps the rule.
  const uint32_t mine = uint32_t(kind) + 1;
  std::atomic<uint32_t>& chosen = header_->auto_rule;
  if (kind == StepRule::Kind::Optimizer) {
    chosen.store(mine, std::memory_order_relaxed);
    return true;
  }
  uint32_t expected = 0;
  return chosen.compare_exchange_strong(expected, mine, std::memory_order_relaxed) || expected == mine;
}

void Runtime::forward_ended() {
  if (!active()) return;
  const StepRule::Kind kind = config_->step.kind;
  if (kind != StepRule::Kind::Forward && kind != StepRule::Kind::Auto) return;
  header_->step_candidates[wire::kStepCandidateForward].fetch_add(1, std::memory_order_relaxed);
  if (kind == StepRule::Kind::Auto && !auto_chooses(StepRule::Kind::Forward)) return;
  ThreadState* t = thread_state();
  if (!t || t->take_step_end(true, current_step())) end_step();
}

void Runtime::dataloader_worker_started(int32_t index) {
  if (!active() || role_.role != wire::ProcessRole::Unknown) return;
  role_ = {wire::ProcessRole::DataLoaderWorker, index >= 0 ? index : -1};
  header_->role_index.store(role_.index, std::memory_order_relaxed);
  header_->role.store(uint32_t(role_.role), std::memory_order_release);
}

void Runtime::distributed_initialised(int32_t rank, int32_t world_size) {
  if (!active() || rank < 0 || world_size <= 0 || rank >= world_size) return;
  header_->world_size.store(world_size, std::memory_order_relaxed);
  header_->rank.store(rank, std::memory_order_release);
}

int Runtime::install_python_window_flag(PythonWindowFlag::Callback fn) {
  if (!active() || !fn) return -1;
  PythonWindowFlag::AddPendingCall add_pending =
      reinterpret_cast<PythonWindowFlag::AddPendingCall>(::dlsym(RTLD_DEFAULT, "Py_AddPendingCall"));
  if (!add_pending) return -1;
  python_window_flag_.install(fn, add_pending);
  windows_.set_recording_listener([](bool on) { g_runtime.python_window_flag_.recording_changed(on); });
  return recording() ? 1 : 0;
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
  windows_.stop();
  cupti_->shutdown();
  header_->closed.store(1, std::memory_order_release);
  // A target that outlived a killed launcher and forks no more: its exit
  // is the last chance to remove the session's objects.
  if (!launcher_alive()) launcher_died();
}

void Runtime::before_fork() {
  if (!active()) return;
  // Before any lock: reading the frames may take Python's own.
  fork_role_ = role_of_fork_child(*python_);
  if (fork_role_.role == wire::ProcessRole::Unknown && role_.role == wire::ProcessRole::CompileWorker)
    fork_role_ = role_;  // a compile worker's children are compile workers
  windows_.lock_for_fork();
  native_->lock_for_fork();
  intern_mu_.lock();
  threads_mu_.lock();
}

void Runtime::after_fork_parent() {
  if (!active()) return;
  threads_mu_.unlock();
  intern_mu_.unlock();
  native_->unlock_after_fork(/*child=*/false);
  windows_.unlock_after_fork();
}

void Runtime::after_fork_child() {
  if (!active()) return;
  threads_mu_.unlock();
  intern_mu_.unlock();
  native_->unlock_after_fork(/*child=*/true);
  windows_.unlock_after_fork();
  // The parent's rings and arena stay the parent's: leave them alone and
  // start a region of our own. The other threads do not exist here.
  active_.store(false, std::memory_order_release);
  cupti_->forget_after_fork();
  forget_thread_state();
  if (thread_key_ok_) pthread_setspecific(thread_key_, nullptr);
  tls_unregistrable = false;
  tls_exited = false;
  // Forked while another thread was finding or building the bridge: that
  // thread is not here to finish. The child tries again at its next library
  // load (api/libc_hooks.cpp), by then finding the bridge built or the build's lock.
  BridgeState loading = BridgeState::Loading;
  bridge_state_.compare_exchange_strong(loading, BridgeState::NotLoaded);
  threads_->clear();
  ring_bytes_->clear();
  interned_->clear();
  arena_.reset();
  named_step_id_.store(0, std::memory_order_relaxed);
  ::munmap(region_, region_bytes_);
  reservation_.release();
  region_ = nullptr;
  header_ = nullptr;
  role_ = fork_role_;
  if (!create_region()) return;
  active_.store(true, std::memory_order_release);
  find_ancestor();  // the parent now, which was the ancestor's child
  windows_.continue_in_child();
}

// Under a schedule only: without one every process records its whole life.
void Runtime::find_ancestor() {
  windows_.follow(config_->schedule.enabled ? find_ancestor_slot(*session_, slot_) : nullptr);
}

void Runtime::publish_op_cost(uint32_t ps) {
  op_cost_ps_.store(ps, std::memory_order_relaxed);
  if (header_) header_->op_cost_ps.store(ps, std::memory_order_relaxed);
}

}  // namespace ptprof::agent
