// `ptprof trigger [--pid P | --session S] (--steps N | --duration 10s)
// [--record-shapes] [--profile-memory] [--with-stack]`: asks a session
// started with `ptprof run --on-demand` to record the next N steps (or the
// next 10 s) into a new window file, with those options for that window,
// waits for the file and prints its path.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "collect/live_sessions.hpp"
#include "ptprof/shared_futex.hpp"
#include "ptprof/trigger_request.hpp"

namespace ptprof::cli {
namespace {

struct TriggerOptions {
  std::optional<int32_t> pid;
  std::string session;
  std::optional<uint64_t> steps;
  std::string duration;
  bool record_shapes = false;
  bool profile_memory = false;
  bool with_stack = false;
};

uint32_t window_options(const TriggerOptions& o) {
  return (o.record_shapes ? wire::kWindowShapes : 0) | (o.profile_memory ? wire::kWindowMemory : 0) |
         (o.with_stack ? wire::kWindowStack : 0);
}

// "10s", "500ms", "2m", "1h", or seconds without a unit.
std::optional<uint64_t> parse_duration_ns(const std::string& s) {
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || end == s.data()) return std::nullopt;
  const std::string unit(end, s.data() + s.size());
  uint64_t scale = 0;
  if (unit.empty() || unit == "s")
    scale = 1'000'000'000ull;
  else if (unit == "ms")
    scale = 1'000'000ull;
  else if (unit == "m")
    scale = 60'000'000'000ull;
  else if (unit == "h")
    scale = 3'600'000'000'000ull;
  if (scale == 0 || n == 0 || n > UINT64_MAX / scale) return std::nullopt;
  return n * scale;
}

Result<std::unique_ptr<launcher::LiveSession>> find_session(const TriggerOptions& o) {
  if (!o.session.empty()) return launcher::LiveSession::open(o.session);
  auto sessions = launcher::list_live_sessions();
  if (o.pid) {
    for (auto& s : sessions)
      for (int32_t pid : s->running_pids())
        if (pid == *o.pid) return std::move(s);
    return Status::error("no running session of this user has a process " + std::to_string(*o.pid) +
                         " (see `ptprof sessions`)");
  }
  if (sessions.size() == 1) return std::move(sessions.front());
  return Status::error(sessions.empty() ? "no running ptprof session of this user"
                                        : "several sessions are running: name one with --session or --pid "
                                          "(see `ptprof sessions`)");
}

// Claims the right to write request seq + 1: moves trigger_claim from seq to
// seq + 1 (a compare-and-swap), or takes over a claim of seq + 1 whose
// holder died before publishing it (killed between claim and publish; it
// would otherwise refuse every later trigger of the run). A holder that has
// not yet written its pid is taken as alive.
bool claim_request(wire::SessionHeader& h, uint32_t seq) {
  const int32_t me = int32_t(::getpid());
  uint32_t expected = seq;
  if (h.trigger_claim.compare_exchange_strong(expected, seq + 1, std::memory_order_acq_rel)) {
    h.trigger_claimer.store(me, std::memory_order_release);  // 0 until here: taken as alive
    return true;
  }
  if (expected != seq + 1 || h.trigger_seq.load(std::memory_order_acquire) != seq) return false;
  int32_t holder = h.trigger_claimer.load(std::memory_order_acquire);
  if (holder <= 0 || holder == me || ::kill(holder, 0) == 0 || errno != ESRCH) return false;
  if (!h.trigger_claimer.compare_exchange_strong(holder, me, std::memory_order_acq_rel)) return false;
  spdlog::warn("trigger: the trigger (pid {}) that claimed window {} is gone; requesting it instead", holder, seq);
  return true;
}

int trigger(const TriggerOptions& o) {
  if (o.steps.has_value() == !o.duration.empty()) {
    spdlog::error("trigger: give exactly one of --steps N or --duration T (e.g. 10s, 500ms, 2m)");
    return 2;
  }
  if (o.steps && *o.steps == 0) {
    spdlog::error("trigger: --steps 0: accepted: a number of steps of 1 or more");
    return 2;
  }
  std::optional<uint64_t> duration_ns;
  if (!o.duration.empty() && !(duration_ns = parse_duration_ns(o.duration))) {
    spdlog::error("trigger: --duration '{}' is not a duration; accepted: N, Ns, Nms, Nm or Nh, N >= 1", o.duration);
    return 2;
  }
  auto found = find_session(o);
  if (!found) {
    spdlog::error("trigger: {}", found.error());
    return 2;
  }
  launcher::LiveSession& s = **found;
  wire::SessionHeader& h = *s.header();
  if (!h.on_demand) {
    spdlog::error("trigger: session {} records by its schedule; only a run started with --on-demand takes triggers",
                  s.name().substr(1));
    return 2;
  }
  const uint32_t seq = h.trigger_seq.load(std::memory_order_acquire);
  if (h.trigger_done.load(std::memory_order_acquire) != seq) {
    spdlog::error(
        "trigger: session {} is still recording window {} of an earlier trigger; try again when it is written",
        s.name().substr(1), seq - 1);
    return 1;
  }
  // Check-then-write would let two triggers both write request seq + 1.
  if (!claim_request(h, seq)) {
    spdlog::error("trigger: another trigger is requesting window {} of session {}; try again when it is written", seq,
                  s.name().substr(1));
    return 1;
  }
  h.trigger_pid = o.pid.value_or(0);
  h.trigger_steps = o.steps.value_or(0);
  h.trigger_duration_ns = duration_ns.value_or(0);
  h.trigger_options = window_options(o);
  // Cleared before publishing: a pid left there would look like a dead
  // holder of the next request's claim, in the instant before its owner
  // writes its own.
  h.trigger_claimer.store(0, std::memory_order_release);
  h.trigger_seq.store(seq + 1, std::memory_order_release);
  // Every agent's trigger watcher (agent/src/window/on_demand.cpp) sleeps on it.
  futex_wake_shared(&h.trigger_seq);
  std::fprintf(stderr, "ptprof: trigger: window %u of session %s requested (%s); waiting for it\n", seq,
               s.name().c_str() + 1, o.pid ? ("process " + std::to_string(*o.pid)).c_str() : "every process");
  std::fflush(stderr);
  for (;;) {
    if (h.trigger_done.load(std::memory_order_acquire) > seq) break;
    if (!s.launcher_alive()) {
      // It may have answered just before it exited.
      if (h.trigger_done.load(std::memory_order_acquire) > seq) break;
      spdlog::error("trigger: session {} ended before window {} was written", s.name().substr(1), seq);
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const std::vector<std::string> paths = wire::read_trigger_paths(h);
  const uint32_t left = h.trigger_paths_left;
  if (paths.empty() && left == 0) {
    std::fprintf(stderr, "ptprof: trigger: window %u recorded no events; no file written\n", seq);
    return 1;
  }
  for (const std::string& p : paths) std::printf("%s\n", p.c_str());
  if (left) {
    std::fflush(stdout);
    spdlog::error("trigger: {} more files of window {} did not fit in the session's list; `ls {}` shows them all", left,
                  seq, std::string(h.output, strnlen(h.output, sizeof h.output)));
    return 1;
  }
  return 0;
}

}  // namespace

void add_trigger(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<TriggerOptions>();
  auto* sub = app.add_subcommand(
      "trigger",
      "Record the next steps of a job started with `ptprof run --on-demand` into a new window file; prints its "
      "path once written. --steps N: the N steps from the next step boundary. --duration T: from now until T has "
      "passed, whatever the steps (also inside one long step, or in a job with no steps); a step cut by either end "
      "of the window is recorded in part.");
  auto* pid = sub->add_option("--pid", opts->pid, "Only this process of the job (finds its session)");
  sub->add_option("--session", opts->session, "The session, as `ptprof sessions` lists it")->excludes(pid);
  sub->add_option("--steps", opts->steps, "Record the next N steps");
  sub->add_option("--duration", opts->duration, "Record from now until this much time has passed: 10s, 500ms, 2m");
  sub->add_flag("--record-shapes", opts->record_shapes,
                "Record operator input shapes in this window (as `ptprof run --record-shapes` does in all)");
  sub->add_flag("--profile-memory", opts->profile_memory,
                "Record memory allocations and frees in this window (as `ptprof run --profile-memory` does in all)");
  sub->add_flag("--with-stack", opts->with_stack,
                "Ask for call stacks in this window (as `ptprof run --with-stack` does in all)");
  sub->callback([opts, &exit_code]() { exit_code = trigger(*opts); });
}

}  // namespace ptprof::cli
