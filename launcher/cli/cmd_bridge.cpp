// `ptprof bridge build|list`: the per-torch bridge cache (bridge_builder.hpp).
// The agent runs `ptprof bridge build --libtorch PATH --for-run ID` itself when
// a process loads a torch with no cached bridge; users run it ahead of time
// where compute nodes have no compiler (docs/bridges.md).
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>
#include <vector>

#include <spdlog/spdlog.h>

#include "bridge/bridge_builder.hpp"
#include "cli/commands.hpp"
#include "collect/live_sessions.hpp"
#include "process/install_paths.hpp"
#include "process/subprocess.hpp"
#include "ptprof/bridge_kit.hpp"
#include "ptprof/bridge_trust.hpp"
#include "ptprof/config.hpp"

namespace ptprof::cli {
namespace {

struct BuildOptions {
  std::string python, libtorch, run_id, prebuilt_into;
  bool force = false, no_build = false;
};

const char* getenv_fn(const char* name) { return std::getenv(name); }

// The libtorch_cpu.so that `python` loads with `import torch`, as mapped.
Result<std::string> libtorch_of_python(const std::string& python) {
  static constexpr char kCode[] =
      "import sys\n"
      "import torch\n"
      "libs = sorted({l.split()[-1] for l in open('/proc/self/maps') if '/libtorch_cpu.so' in l})\n"
      "sys.stdout.write(''.join('PTPROF_LIB ' + p + '\\n' for p in libs))\n";
  if (launcher::find_executable(python).empty())
    return Status::error("--python " + python + ": no such interpreter (give a path, or a name on PATH)");
  auto done = launcher::run_to_completion({python, "-c", kCode}, launcher::helper_environment());
  std::vector<std::string> libs;
  std::istringstream in(done.output);
  std::string last;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("PTPROF_LIB ", 0) == 0)
      libs.push_back(line.substr(11));
    else if (!line.empty())
      last = line;
  }
  if (!done.started || done.exit_status != 0 || libs.empty())
    return Status::error("--python " + python + " cannot import torch" +
                         (done.started ? (last.empty() ? "" : ": " + last) : ": " + done.error));
  if (libs.size() > 1)
    return Status::error("--python " + python + " loads " + std::to_string(libs.size()) + " libtorch_cpu libraries (" +
                         libs[0] + ", " + libs[1] + "); give one with --libtorch");
  return libs[0];
}

void say_compiling(const launcher::BridgeBuildRequest& req, const std::string& replacing) {
  if (!replacing.empty()) std::fprintf(stderr, "ptprof: %s: rebuilding it\n", replacing.c_str());
  std::fprintf(stderr, "ptprof: building the torch bridge for torch %s (%s; once per torch, cached)... ",
               req.torch.version.empty() ? "of unknown version" : req.torch.version.c_str(), req.torch.lib_dir.c_str());
  std::fflush(stderr);
}

void say_waiting(const launcher::BridgeBuildRequest& req) {
  std::fprintf(stderr, "ptprof: waiting for another process's build of the torch bridge for torch %s (at most %d s)\n",
               req.torch.version.c_str(), req.timeout_s);
  std::fflush(stderr);
}

// What to run to build the bridge where a compiler is, for the failure line.
// By library, not interpreter: the agent cannot tell a virtual environment's
// python from the interpreter it links to (/proc/self/exe).
std::string how_to_build_elsewhere(const bridge::TorchInstall& torch) {
  return "ptprof bridge build --libtorch " + torch.library;
}

// Whether this builder is the first of the run (the session --for-run names)
// to report a failure. The marker in the cache remembers one too, but a cache
// that cannot be written (read-only, no such directory) keeps no marker, and
// every process of the run would say the same line. True when the session
// cannot be opened: then saying it again beats saying nothing.
bool first_failure_of_run(const std::string& session) {
  auto live = launcher::LiveSession::open(session);
  return !live || wire::claim_said_once(*(*live)->header(), wire::kSaidBuildFailed);
}

int build(const BuildOptions& o) {
  if (o.python.empty() == o.libtorch.empty()) {
    spdlog::error("bridge build: give exactly one of --python PY or --libtorch PATH");
    return 2;
  }
  std::string library = o.libtorch;
  if (!o.python.empty()) {
    auto found = libtorch_of_python(o.python);
    if (!found) {
      spdlog::error("bridge build: {}", found.error());
      return 2;
    }
    library = std::move(*found);
  }
  launcher::BridgeBuildRequest req;
  req.torch = bridge::describe_torch(library);
  if (req.torch.library.empty()) {
    spdlog::error("bridge build: --libtorch {}: no such file (expected a libtorch_cpu.so)", library);
    return 2;
  }
  auto paths = launcher::find_install_paths();
  if (!paths || paths->bridge_kit.empty()) {
    spdlog::error("bridge build: {}",
                  paths ? "cannot find the bridge sources (share/ptprof/bridge) beside ptprof" : paths.error());
    return 1;
  }
  auto config = config_from_env(getenv_fn);
  if (!config) {
    spdlog::error("bridge build: {}", config.error());
    return 2;
  }
  req.kit_dir = paths->bridge_kit;
  req.cache_root = o.prebuilt_into.empty() ? config->bridge_cache : o.prebuilt_into;
  req.timeout_s = int(config->bridge_build_timeout_s);
  req.on_lock_wait = &say_waiting;
  req.prebuilt = !o.prebuilt_into.empty();
  req.force = o.force;
  req.no_build = o.no_build;
  req.run_id = o.run_id;
  req.on_compile_start = &say_compiling;
  const bool for_run = !o.run_id.empty();

  auto r = launcher::build_bridge(req);
  using Outcome = launcher::BridgeBuildResult::Outcome;
  switch (r.outcome) {
    case Outcome::Cached:
      if (!for_run)
        std::fprintf(stderr, "ptprof: the torch bridge for torch %s is cached: %s\n", req.torch.version.c_str(),
                     r.dir.c_str());
      std::printf("%s\n", r.library.c_str());
      return 0;
    case Outcome::Built:
      std::fprintf(stderr, "done in %.1f s (%s)\n", r.seconds, r.dir.c_str());
      std::printf("%s\n", r.library.c_str());
      return 0;
    case Outcome::Failed:
      break;
  }
  // One line, whether or not "building..." began it.
  if (for_run && (r.failed_before || !first_failure_of_run(o.run_id))) return 1;  // said once in this run already
  std::string line = r.compile_started ? "failed: " + r.error
                                       : (for_run ? "ptprof: " : "ptprof bridge build: ") +
                                             std::string("cannot build the torch bridge for torch ") +
                                             req.torch.version + ": " + r.error;
  if (for_run)
    line +=
        "; operator events are off for this torch (fix that and run again, or build the bridge where a compiler "
        "is: " +
        how_to_build_elsewhere(req.torch) + "; see docs/bridges.md)";
  std::fprintf(stderr, "%s\n", line.c_str());
  return 1;
}

struct Entry {
  std::string key;
  bool prebuilt = false;
  std::map<std::string, std::string> info;
};

void read_entries(const std::string& root, bool prebuilt, std::vector<Entry>& entries) {
  if (DIR* d = ::opendir(root.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.empty() || name[0] == '.') continue;
      std::string info_path = root;
      info_path.append("/").append(name).append("/").append(bridge::kInfoName);
      auto info = bridge::read_info(info_path);
      if (!info.empty()) entries.push_back({name, prebuilt, std::move(info)});
    }
    ::closedir(d);
  }
}

// A cached bridge is for one torch file; a prebuilt one for any torch of its
// version whose libtorch_cpu.so has the size it was built against. Either is
// checked as the agent checks it before loading (bridge_trust.hpp); `why`
// gets the reason when the state is not ok.
std::string state_of(const std::string& root, const Entry& e, const std::function<std::string(const char*)>& get,
                     std::string& why) {
  // Built from another ptprof's bridge sources: this ptprof never loads it.
  if (get("bridge_sources") != bridge::kSourceHash) return "other";
  bridge::TorchInstall now;
  if (!e.prebuilt) {
    now = bridge::describe_torch(get("libtorch_cpu"));
    if (now.library.empty()) return "gone";
    if (std::to_string(now.library_bytes) != get("libtorch_cpu_bytes")) return "stale";
    if (bridge::cache_key(now, bridge::kSourceHash) != e.key) {
      why = root + "/" + e.key + ": bridge.info is for torch " + now.version + " at " + now.library +
            ", whose bridge has another name (copied or moved here)";
      return "broken";
    }
  }
  auto verdict = bridge::check_entry(root, e.key, e.prebuilt ? nullptr : &now, bridge::kSourceHash);
  why = verdict.why;
  switch (verdict.kind) {
    case bridge::Verdict::Kind::Ok:
      return "ok";
    case bridge::Verdict::Kind::Untrusted:
      return "untrusted";
    default:
      return "broken";
  }
}

int list() {
  const std::string root = bridge::cache_root(getenv_fn);
  auto paths = launcher::find_install_paths();
  const std::string prebuilt_root = paths ? paths->prebuilt_bridges : std::string();
  std::vector<Entry> entries;
  read_entries(root, false, entries);
  if (!prebuilt_root.empty()) read_entries(prebuilt_root, true, entries);
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.key < b.key; });
  std::printf("cache: %s\n", root.empty() ? "(no cache directory: HOME is unset)" : root.c_str());
  if (!prebuilt_root.empty()) std::printf("prebuilt (shipped with this ptprof): %s\n", prebuilt_root.c_str());
  if (entries.empty()) {
    std::printf("no torch bridges: one is built when a profiled program first imports torch\n");
    return 0;
  }
  std::printf("%-18s  %-8s  %-20s  %-5s  %-4s  %-5s  %s\n", "torch", "kind", "built", "abi11", "cuda", "state",
              "libtorch_cpu");
  for (const auto& e : entries) {
    auto get = [&](const char* k) {
      auto it = e.info.find(k);
      return it == e.info.end() ? std::string("?") : it->second;
    };
    const std::string library =
        e.prebuilt ? "any of " + get("libtorch_cpu_bytes") + " bytes (built with " + get("libtorch_cpu") + ")"
                   : get("libtorch_cpu");
    std::string why;
    const std::string state = state_of(e.prebuilt ? prebuilt_root : root, e, get, why);
    std::printf("%-18s  %-8s  %-20s  %-5s  %-4s  %-5s  %s\n", get("torch_version").c_str(),
                e.prebuilt ? "prebuilt" : "cached", get("built").c_str(), get("cxx11_abi").c_str(), get("cuda").c_str(),
                state.c_str(), library.c_str());
    if (!why.empty()) std::printf("    %s: %s\n", state.c_str(), why.c_str());
  }
  return 0;
}

}  // namespace

void add_bridge(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand(
      "bridge",
      "The torch bridge: the part of ptprof compiled against each torch (it registers RecordFunction callbacks).\n"
      "`ptprof run` builds it on demand the first time a target imports a torch (a few seconds, once) and caches\n"
      "it per user in $PTPROF_BRIDGE_CACHE, else $XDG_CACHE_HOME/ptprof/bridges, else ~/.cache/ptprof/bridges.");
  sub->require_subcommand(1);

  auto opts = std::make_shared<BuildOptions>();
  auto* b =
      sub->add_subcommand("build",
                          "Build (or find cached) the bridge for one torch, ahead of time: for machines where "
                          "the profiled jobs run without a compiler (docs/bridges.md). Prints the bridge's path.");
  b->add_option("--python", opts->python, "An interpreter: the bridge is built for the torch it imports");
  b->add_option("--libtorch", opts->libtorch, "Or the torch's libtorch_cpu.so itself");
  b->add_flag("--force", opts->force, "Rebuild even when a bridge is cached");
  b->add_option("--prebuilt-into", opts->prebuilt_into,
                "Build a bridge to ship with ptprof instead of caching it: DIR is the install's share/ptprof/bridges "
                "(docs/bridges.md); it is then used for this torch version wherever that ptprof is installed");
  b->add_option("--for-run", opts->run_id, "(used by the agent) the run asking; failures are reported once per run")
      ->group("");
  b->add_flag("--no-build", opts->no_build, "(used by the agent) only report, do not build")->group("");
  b->callback([opts, &exit_code]() { exit_code = build(*opts); });

  auto* l = sub->add_subcommand(
      "list",
      "List the torch bridges: those cached on this machine (with whether the torch they were built "
      "for is still there) and those prebuilt and shipped with this ptprof");
  l->callback([&exit_code]() { exit_code = list(); });
}

}  // namespace ptprof::cli
