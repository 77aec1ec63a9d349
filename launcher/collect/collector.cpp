#include "collect/collector.hpp"

#include <signal.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include <spdlog/spdlog.h>

#include "ptprof/slot_window.hpp"

namespace ptprof::launcher {
namespace {

// A zombie still answers kill(pid, 0); /proc tells it apart.
bool pid_running(int32_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  auto close = line.rfind(')');
  return !(close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z');
}

}  // namespace

Collector::Collector(Session& session, CollectorOptions opts, clock::Kind clock, WindowSink& sink)
    : session_(session),
      opts_(std::move(opts)),
      conv_(clock),
      sink_(sink),
      last_resample_(std::chrono::steady_clock::now()),
      last_liveness_(last_resample_) {}

Collector::~Collector() = default;

void Collector::attach_new_processes() {
  auto* h = session_.header();
  uint32_t n = std::min(h->next_slot.load(std::memory_order_acquire), wire::kMaxProcesses);
  for (; slots_claimed_ < n; ++slots_claimed_) pending_.push_back(slots_claimed_);
  // Processes register concurrently and finish in any order: a slot still
  // being registered stays pending however many later slots are ready.
  for (size_t i = 0; i < pending_.size();) {
    wire::ProcessSlot& slot = h->slots[pending_[i]];
    auto state = wire::SlotState(slot.state.load(std::memory_order_acquire));
    if (state == wire::SlotState::Ready) {
      attach(slot);
    } else if (state != wire::SlotState::Failed) {
      ++i;
      continue;
    }  // Failed: the agent counted it in lost_processes
    pending_.erase(pending_.begin() + long(i));
  }
}

void Collector::attach(wire::ProcessSlot& slot) {
  char name[sizeof slot.region + 1] = {};
  std::memcpy(name, slot.region, sizeof slot.region);
  auto region = map_region(name, session_.name());
  if (!region) {
    spdlog::warn("process {}: {}", slot.pid, region.error());
    ++unattached_;
    return;
  }
  // An exec keeps the pid: later images get a suffix so names stay unique.
  const int uses = pid_uses_[slot.pid]++;
  processes_.push_back(std::make_unique<ProcessCollector>(std::move(*region), FileStem{opts_.host, slot.pid, uses},
                                                          opts_, conv_, sink_));
  slots_.push_back(&slot);
}

// Slots still pending when the run ends belong to processes that died while
// registering: count them, and remove a region they may have created.
void Collector::abandon_pending() {
  for (uint32_t index : pending_) {
    ++unattached_;
    // The agent publishes its region's (random) name before creating it.
    char name[sizeof(wire::ProcessSlot::region) + 1] = {};
    std::memcpy(name, session_.header()->slots[index].region, sizeof(wire::ProcessSlot::region));
    if (wire::is_region_of(name, session_.name())) ::shm_unlink(name);
  }
  pending_.clear();
}

bool Collector::process_gone(ProcessCollector& p, size_t index) {
  if (p.closed_flag()) return true;
  // Replaced by exec: a later region with the same pid.
  for (size_t j = index + 1; j < processes_.size(); ++j)
    if (processes_[j]->pid() == p.pid()) return true;
  return !pid_running(p.pid());
}

void Collector::for_each_process(const std::function<void(size_t)>& work) {
  if (!pool_ && opts_.drain_threads > 1 && processes_.size() > 1) {
    pool_.emplace(opts_.drain_threads);
    spdlog::debug("{} processes: drained on {} threads", processes_.size(), pool_->threads());
  }
  if (pool_) {
    pool_->for_each(processes_.size(), work);
  } else {
    for (size_t i = 0; i < processes_.size(); ++i) work(i);
  }
}

uint64_t Collector::poll() {
  auto now = std::chrono::steady_clock::now();
  if (now - last_resample_ > std::chrono::milliseconds(100)) {
    conv_.resample();
    last_resample_ = now;
  }
  uint64_t horizon = clock::ticks_ordered(conv_.kind());
  attach_new_processes();
  std::atomic<uint64_t> n{0};
  bool check_liveness = now - last_liveness_ > std::chrono::milliseconds(50);
  if (check_liveness) last_liveness_ = now;
  // Each process on one thread: what it touches besides its own state is
  // read-only in a round (the horizon, the clock map, the other processes'
  // pids, which process_gone reads) or takes the sink's lock.
  for_each_process([&](size_t i) {
    auto& p = *processes_[i];
    if (p.finished()) return;
    n.fetch_add(p.drain(horizon), std::memory_order_relaxed);
    p.finish_ready_windows();
    if (check_liveness && process_gone(p, i)) {
      // A process killed in a window (SIGKILL, a crash its agent did not
      // see) never ended it: the children that follow its windows would
      // record on until they exit. Ended on its behalf; a no-op for one that
      // exited through its agent, which ended it itself.
      if (wire::close_slot_window(*slots_[i]))
        spdlog::debug("process {} ended without closing its window: closed for the processes that follow it", p.pid());
      p.finish();
    }
  });
  return n.load(std::memory_order_relaxed);
}

bool Collector::all_finished() {
  attach_new_processes();
  if (!pending_.empty()) return false;
  for (size_t i = 0; i < processes_.size(); ++i) {
    auto& p = *processes_[i];
    if (!p.finished() && !process_gone(p, i)) return false;
  }
  return true;
}

void Collector::finish_all() {
  attach_new_processes();
  abandon_pending();
  for_each_process([&](size_t i) { processes_[i]->finish(); });
}

Collector::WindowProgress Collector::window_progress(uint32_t index) const {
  WindowProgress w;
  for (const auto& p : processes_) {
    w.begun |= p->window_begun(index);
    w.open |= p->window_open(index);
  }
  return w;
}

uint32_t Collector::still_running() {
  uint32_t n = 0;
  for (size_t i = 0; i < processes_.size(); ++i)
    if (!processes_[i]->finished() && !process_gone(*processes_[i], i)) ++n;
  return n;
}

Totals Collector::totals() {
  Totals t;
  std::vector<std::string> seen;
  for (const auto& p : processes_) {
    for (std::string& note : p->cuda_notes()) {
      if (std::find(seen.begin(), seen.end(), note) != seen.end()) continue;
      t.cuda_notes.push_back(note + " (pid " + std::to_string(p->pid()) + ")");
      seen.push_back(std::move(note));
    }
    t.out_of_memory.insert(t.out_of_memory.end(), p->out_of_memory().begin(), p->out_of_memory().end());
    t.out_of_memory_count += p->out_of_memory_count();
    const StepFacts steps = p->step_facts();
    if (t.processes == 0 || steps.steps_ended > t.steps.steps_ended) t.steps = steps;
    ++t.processes;
    t.threads += p->threads();
    t.events += p->events();
    t.dropped += p->dropped();
    t.losses += p->losses();
    const bool parent_profiled = std::any_of(processes_.begin(), processes_.end(),
                                             [&](const auto& o) { return o != p && o->pid() == p->ppid(); });
    t.roles.emplace_back(p->role(parent_profiled), p->pid());
  }
  t.lost_processes = session_.header()->lost_processes.load(std::memory_order_relaxed) + unattached_;
  t.shm_short_processes = session_.header()->shm_short_processes.load(std::memory_order_relaxed);
  return t;
}

}  // namespace ptprof::launcher
