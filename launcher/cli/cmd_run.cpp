// `ptprof run [options] -- cmd args...`
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "cli/output_dir.hpp"
#include "cli/run_summary.hpp"
#include "cli/thread_count.hpp"
#include "collect/collector.hpp"
#include "collect/file_window_sink.hpp"
#include "collect/run_names.hpp"
#include "collect/session.hpp"
#include "collect/trigger_service.hpp"
#include "log.hpp"
#include "process/install_paths.hpp"
#include "process/target.hpp"
#include "ptprof/bridge_cache.hpp"
#include "ptprof/config.hpp"
#include "ptprof/schedule.hpp"

extern char** environ;

namespace ptprof::cli {
namespace {

struct RunOptions {
  std::string schedule, step, activities, on_trace_ready, log_level;
  // Strings: the schedule parser validates them, with its messages.
  std::optional<std::string> skip_first, wait, warmup, active, repeat;
  // Passed on as given, even empty or negative: config_from_env rejects them
  // with the same message as the environment variable's.
  std::optional<std::string> output, ring_kb;
  bool python_attribution = false, no_native_stack = false;
  bool record_shapes = false, profile_memory = false, with_stack = false, wait_descendants = false, on_demand = false;
  std::vector<std::string> command;
};

// The exit status of a run whose target succeeded but whose trace could not
// be written (or completed): distinct from 0, from 2 (bad input) and from
// 127 (cannot start); a failing target's own status is passed on instead.
constexpr int kWriteFailedStatus = 3;

// How long descendants may outlive the target before they are cut off.
constexpr std::chrono::seconds kDescendantGrace{2};

using Environment = std::map<std::string, std::string>;

Environment current_environment() {
  Environment env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

// The schedule flags (--wait, ...) override the matching fields of the
// schedule text (--schedule, else PTPROF_SCHEDULE). Both go through the
// schedule's own parser, so its messages apply, and the merged schedule is
// printed back into PTPROF_SCHEDULE.
Status merge_schedule_flags(const RunOptions& o, Environment& env) {
  struct Flag {
    const char* name;
    const char* key;
    const std::optional<std::string>& value;
    uint64_t Schedule::*field;
  };
  const Flag flags[] = {{"--skip-first", "skip_first", o.skip_first, &Schedule::skip_first},
                        {"--wait", "wait", o.wait, &Schedule::wait},
                        {"--warmup", "warmup", o.warmup, &Schedule::warmup},
                        {"--active", "active", o.active, &Schedule::active},
                        {"--repeat", "repeat", o.repeat, &Schedule::repeat}};
  if (std::none_of(std::begin(flags), std::end(flags), [](const Flag& f) { return f.value.has_value(); })) return {};
  const std::string base = env.count(env::kSchedule) ? env[env::kSchedule] : "";
  auto merged = parse_schedule(base);
  if (!merged) return Status::error(std::string(env::kSchedule) + "='" + base + "': " + merged.error());
  for (const Flag& f : flags) {
    if (!f.value) continue;
    // One number: a flag sets its own field, never another key.
    if (f.value->find(',') != std::string::npos)
      return Status::error(std::string(f.name) + " takes one number, not '" + *f.value + "'");
    auto one = parse_schedule(std::string(f.key) + "=" + *f.value);
    if (!one) return Status::error(std::string(f.name) + "='" + *f.value + "': " + one.error());
    merged->enabled = true;
    (*merged).*f.field = (*one).*f.field;
  }
  env[env::kSchedule] = merged->to_string();
  return {};
}

// Flags become PTPROF_* variables.
Status apply_flags(const RunOptions& o, Environment& env) {
  if (o.output) env[env::kOutput] = *o.output;
  if (!o.schedule.empty()) env[env::kSchedule] = o.schedule;
  if (Status merged = merge_schedule_flags(o, env); !merged.ok()) return merged;
  if (!o.step.empty()) env[env::kStep] = o.step;
  if (!o.activities.empty()) env[env::kActivities] = o.activities;
  if (o.record_shapes) env[env::kRecordShapes] = "1";
  if (o.profile_memory) env[env::kProfileMemory] = "1";
  if (o.with_stack) env[env::kWithStack] = "1";
  if (o.python_attribution) env[env::kPythonAttribution] = "1";
  if (o.no_native_stack) env[env::kNativeStack] = "0";
  if (!o.on_trace_ready.empty()) env[env::kOnTraceReady] = o.on_trace_ready;
  if (!o.log_level.empty()) env[env::kLogLevel] = o.log_level;
  if (o.ring_kb) env[env::kRingKb] = *o.ring_kb;
  if (o.on_demand) env[env::kOnDemand] = "1";
  if (o.wait_descendants) env[env::kWaitDescendants] = "1";
  return {};
}

std::string prepend_path(const Environment& env, const char* var, const std::string& first, char sep) {
  auto it = env.find(var);
  if (it == env.end() || it->second.empty()) return first;
  return first + sep + it->second;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || !*buf) return "localhost";
  return buf;
}

// What `ptprof sessions` shows and `ptprof trigger` checks.
void describe_session(wire::SessionHeader& h, const Config& config, const std::vector<std::string>& command) {
  h.launcher_pid = getpid();
  h.on_demand = config.on_demand ? 1 : 0;
  std::snprintf(h.output, sizeof h.output, "%s", config.output.c_str());
  std::string cmd;
  for (const std::string& a : command) cmd += (cmd.empty() ? "" : " ") + a;
  std::snprintf(h.command, sizeof h.command, "%s", cmd.c_str());
}

// Records consumed in one round above which the next round starts at once.
constexpr uint64_t kBusyRound = 32 * 1024;

// An option's value, not the `--` that ends the options (CLI11 takes it for
// one when the value is missing).
CLI::Validator a_value() {
  return CLI::Validator(
      [](std::string& v) { return v == "--" ? std::string("needs a value before '--', got none") : std::string(); },
      "");
}

// Step 1: the whole PTPROF_* environment, flags merged in, checked before
// anything starts. Says what is wrong and gives nothing when it is not valid.
std::optional<Config> validate(const RunOptions& o, Environment& env) {
  if (o.command.empty()) {
    spdlog::error("run: no command given; usage: ptprof run [options] -- cmd args...");
    return std::nullopt;
  }
  if (Status s = apply_flags(o, env); !s.ok()) {
    spdlog::error("run: {}", s.message());
    return std::nullopt;
  }
  auto config = config_from_env([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  if (!config) {
    for_each_line(config.error(), [](std::string_view line) { spdlog::error("run: {}", line); });
    return std::nullopt;
  }
  if (!config->log_level.empty()) launcher::set_log_level(config->log_level);
  if (config->on_demand && !config->schedule.to_string().empty()) {
    spdlog::error(
        "run: --on-demand (PTPROF_ON_DEMAND=1) records only the windows `ptprof trigger` asks for; it "
        "takes no schedule, got '{}'",
        config->schedule.to_string());
    return std::nullopt;
  }
  return std::move(*config);
}

// The target's environment: the session to register in, the agent preloaded,
// the Python module and NVTX's injection found.
std::vector<std::string> target_environment(Environment env, const launcher::Session& session,
                                            const launcher::InstallPaths& paths, const Config& config) {
  env[wire::kSessionEnv] = session.name();
  // The agent runs `ptprof bridge build` through this when a process imports
  // a torch that has no cached bridge yet.
  if (!paths.launcher.empty()) env[env::kLauncher] = paths.launcher;
  // Absolute, so that the target's chdir cannot move it (cache_root reads a
  // relative one against the current directory: here, where ptprof started).
  if (env.count(env::kBridgeCache) && !env[env::kBridgeCache].empty())
    env[env::kBridgeCache] = bridge::cache_root([&env](const char* n) -> const char* {
      auto it = env.find(n);
      return it == env.end() ? nullptr : it->second.c_str();
    });
  env["LD_PRELOAD"] = prepend_path(env, "LD_PRELOAD", paths.preload, ':');
  // NVTX ranges become ptprof ranges: NVTX loads its injection from here
  // (the agent implements InitializeInjectionNvtx2). A tool the user set
  // there already keeps its place.
  if (!env.count("NVTX_INJECTION64_PATH")) env["NVTX_INJECTION64_PATH"] = paths.agent;
  if (!paths.python_dir.empty()) env["PYTHONPATH"] = prepend_path(env, "PYTHONPATH", paths.python_dir, ':');
  env[env::kOutput] = config.output;
  std::vector<std::string> envv;
  envv.reserve(env.size());
  for (auto& [k, v] : env) envv.push_back(std::string(k).append("=").append(v));
  return envv;
}

launcher::CollectorOptions collector_options(const Config& config, unsigned drain_threads) {
  launcher::CollectorOptions copts;
  copts.output_dir = config.output;
  copts.host = launcher::file_safe_host(host_name());
  copts.run_id = launcher::new_run_id();
  copts.schedule = config.schedule.to_string();
  copts.realtime_offset_ns = int64_t(clock::realtime_ns()) - int64_t(clock::monotonic_ns());
  copts.interrupted = launcher::run_interrupted;
  copts.drain_threads = drain_threads;
  return copts;
}

// Step 3: drains the session until the target and (within the grace
// period, or all of them with wait_descendants) its descendants are gone.
// Returns how many processes were still running when it gave up on them.
uint32_t drain_until_exit(launcher::Target& target, launcher::Collector& collector, launcher::FileWindowSink& sink,
                          launcher::TriggerService& triggers, const Config& config) {
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> exited_at;
  const auto hook = [&sink](pid_t pid) { return sink.owns(pid); };
  for (;;) {
    const uint64_t n = collector.poll();
    launcher::reap_orphans(target.pid(), hook);
    if (!exited_at && target.poll_exit()) exited_at = Clock::now();
    if (exited_at) {
      // What is left of the target's tree: the launcher is a subreaper, so
      // orphans are its children (a child may not have registered yet).
      const uint32_t left = launcher::count_children(hook);
      if (left == 0 && (config.wait_descendants || collector.all_finished())) return 0;
      // Descendants may outlive the target briefly (workers shutting down);
      // give them a moment, not forever, and say what was cut.
      if (!config.wait_descendants && Clock::now() - *exited_at > kDescendantGrace)
        return std::max(collector.still_running(), left);
    }
    sink.reap();
    if (config.on_demand) triggers.poll(false);
    // Drain in batches: a short sleep between rounds leaves the target's
    // cores alone (on a small machine the launcher shares them). Only a round
    // that found a lot, i.e. rings filling up, goes again at once.
    if (n < kBusyRound) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

int run(const RunOptions& o) {
  Environment env = current_environment();
  const std::optional<Config> config = validate(o, env);
  if (!config) return 2;
  const Result<unsigned> drain_threads = cli::drain_threads();
  if (!drain_threads) {
    spdlog::error("run: {}", drain_threads.error());
    return 2;
  }
  auto paths = launcher::find_install_paths();
  if (!paths) {
    spdlog::error("run: {}", paths.error());
    return 1;
  }
  if (Status s = launcher::prepare_output_dir(config->output); !s.ok()) {
    spdlog::error("run: {}", s.message());
    return 2;
  }

  // Step 2: the session, the collector and the target.
  const clock::Kind clock_kind = clock::tsc_usable() ? clock::Kind::Tsc : clock::Kind::Monotonic;
  auto session =
      launcher::Session::create(config->ring_bytes ? config->ring_bytes : wire::kDefaultRingBytes, clock_kind);
  if (!session) {
    spdlog::error("run: {}", session.error());
    return 1;
  }
  describe_session(*(*session)->header(), *config, o.command);
  launcher::FileWindowSink sink(config->on_trace_ready);
  launcher::Collector collector(**session, collector_options(*config, *drain_threads), clock_kind, sink);
  launcher::TriggerService triggers(**session, collector, sink);
  launcher::become_subreaper();
  auto target = launcher::Target::start(o.command, target_environment(std::move(env), **session, *paths, *config));
  if (!target) {
    spdlog::error("run: {}", target.error());
    return 127;
  }
  launcher::forward_signals_to(target->pid());

  const uint32_t cut_off = drain_until_exit(*target, collector, sink, triggers, *config);
  collector.finish_all();
  if (config->on_demand) triggers.poll(true);
  (*session)->unlink();
  sink.wait_all();

  // Step 4: the summary, and the exit status.
  print_run_summary(collector.totals(), sink, cut_off, kDescendantGrace, *config);
  const int status = target->exit_status();
  return status == 0 && !sink.failed_files().empty() ? kWriteFailedStatus : status;
}

}  // namespace

void add_run(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<RunOptions>();
  auto* sub = app.add_subcommand(
      "run",
      "Run a command under the profiler: ptprof run [options] -- python train.py\n"
      "Every option is also an environment variable (PTPROF_*); flags override the environment.\n"
      "Exit status: the command's (128+N if killed by signal N); 2 for bad options or an output directory that "
      "cannot be written, before the command starts; 127 if it cannot start; 3 if it exited 0 but a trace file "
      "could not be written (a full disk, say).");
  sub->add_option("-o,--output", opts->output, "Output directory for trace files (PTPROF_OUTPUT; default ./ptprof-out)")
      ->check(a_value());
  sub->add_option("--schedule", opts->schedule,
                  "skip_first=N,wait=N,warmup=N,active=N,repeat=N as torch.profiler.schedule (PTPROF_SCHEDULE; "
                  "default: record everything as one window)");
  sub->add_option("--skip-first", opts->skip_first, "Schedule: steps to skip first");
  sub->add_option("--wait", opts->wait, "Schedule: steps to wait in each cycle");
  sub->add_option("--warmup", opts->warmup, "Schedule: warmup steps in each cycle (recorded, discarded)");
  sub->add_option("--active", opts->active, "Schedule: recorded steps in each cycle");
  sub->add_option("--repeat", opts->repeat, "Schedule: cycles (0 = until the program ends)");
  sub->add_option(
      "--step", opts->step,
      "What ends a step: optimizer (end of Optimizer.step#*: training loops), dataloader (end of each "
      "DataLoader batch: training or inference over a DataLoader), forward (the end of each outermost call of the "
      "model, the first torch.nn.Module called outside any other: an inference loop without a DataLoader), auto "
      "(the optimizer if one steps, else the DataLoader, else the model's forward), manual (ptprof.step() only), "
      "cudaProfilerApi (each cudaProfilerStart..Stop is a step; "
      "nothing is recorded outside them; without a schedule each is a window of its own), or the name of a "
      "record_function scope, ptprof.range or operator such as aten::linear (a loop with neither; an "
      "operator's name costs every operator a callback) (PTPROF_STEP; default optimizer)");
  sub->add_option("--activities", opts->activities,
                  "cpu, cuda or cpu,cuda (PTPROF_ACTIVITIES; default cpu,cuda). cuda records the CUDA "
                  "runtime and driver calls the program makes");
  sub->add_flag("--record-shapes", opts->record_shapes, "Record operator input shapes (PTPROF_RECORD_SHAPES=1)");
  sub->add_flag("--profile-memory", opts->profile_memory,
                "Sets PTPROF_PROFILE_MEMORY=1: every allocation and free torch reports to profilers (its CPU "
                "and CUDA caching allocators) in recorded steps, and CUDA segments; see `ptprof memory`. A "
                "program may start torch.profiler itself: while it runs, torch reports memory to it, not to "
                "ptprof (docs/memory.md)");
  sub->add_flag("--with-stack", opts->with_stack,
                "Sets PTPROF_WITH_STACK=1: each operator's Python (file, line, function) and native call stack, as "
                "torch.profiler's with_stack; see `report --group-by-stack-n` and `flamegraph`");
  sub->add_flag("--no-native-stack", opts->no_native_stack,
                "Sets PTPROF_NATIVE_STACK=0: --with-stack records Python frames only (native frames cost an "
                "unwind per op)");
  sub->add_flag("--python-attribution", opts->python_attribution,
                "Sets PTPROF_PYTHON_ATTRIBUTION=1: each operator called from Python carries the line of the "
                "user's code that called it (its Source Location), at a fraction of --with-stack's cost");
  sub->add_option("--on-trace-ready", opts->on_trace_ready,
                  "Shell command (sh -c) run after each window's file is complete, e.g. 'gzip {}'; {} stands for "
                  "its path, bare or quoted alike, which is also in $PTPROF_TRACE_FILE; a failing command is "
                  "reported (PTPROF_ON_TRACE_READY)")
      ->check(a_value());
  sub->add_option("--log-level", opts->log_level,
                  "Log level of the launcher and the agent: trace, debug, info, warn, error, off (PTPROF_LOG_LEVEL)");
  sub->add_flag("--on-demand", opts->on_demand,
                "Record nothing until `ptprof trigger` asks for the next N steps or seconds; each trigger writes "
                "a new window file (PTPROF_ON_DEMAND=1)");
  sub->add_option("--ring-kb", opts->ring_kb,
                  "Ring size per thread in KiB, a power of two from 64 to 1048576 (PTPROF_RING_KB; default 2048)");
  sub->add_flag("--wait-descendants", opts->wait_descendants,
                "Wait for the command's whole process tree to exit, daemons included: by default processes "
                "still running 2 s after the command exits are cut off, and the summary says so "
                "(PTPROF_WAIT_DESCENDANTS=1)");
  sub->add_option("command", opts->command, "The command to profile, after --")->required();
  sub->positionals_at_end();
  sub->callback([opts, &exit_code]() { exit_code = run(*opts); });
}

}  // namespace ptprof::cli
