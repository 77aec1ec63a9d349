#include "cli/analysis_python.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "cli/commands.hpp"
#include "process/install_paths.hpp"
#include "process/subprocess.hpp"

namespace ptprof::cli {
namespace {

constexpr std::string_view kPythonPathEntry = "PYTHONPATH=";

// The helper's environment (launcher::helper_environment: no agent preloaded,
// no session) with ptprof's package first on PYTHONPATH, ahead of the user's.
std::vector<std::string> module_environment(const std::string& python_dir) {
  std::vector<std::string> env;
  for (std::string& kv : launcher::helper_environment())
    if (kv.rfind(kPythonPathEntry, 0) != 0) env.push_back(std::move(kv));
  const char* old = std::getenv("PYTHONPATH");
  env.push_back(std::string(kPythonPathEntry) + python_dir + (old && *old ? ":" + std::string(old) : ""));
  return env;
}

}  // namespace

int run_analysis_module(const std::string& command, const std::string& python_opt, const std::string& module,
                        const std::vector<std::string>& args) {
  auto paths = launcher::find_install_paths();
  if (!paths) return usage_error(command, paths.error());
  if (paths->python_dir.empty())
    return usage_error(command,
                       "cannot find ptprof's Python package (for python -m " + module + ") next to this ptprof");
  std::string python = python_opt;
  if (python.empty()) {
    const char* env = std::getenv("PTPROF_ANALYSIS_PYTHON");
    python = env && *env ? env : "python3";
  }
  std::vector<std::string> argv = {python, "-m", module, "--ptprof", paths->launcher};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::vector<std::string> env = module_environment(paths->python_dir);
  auto cargv = launcher::exec_strings(argv);
  auto cenv = launcher::exec_strings(env);
  // Spawned, not run_to_completion: the module's stdio is the user's terminal
  // (tables, progress), passed through as it is.
  pid_t pid = 0;
  if (int err = ::posix_spawnp(&pid, cargv[0], nullptr, nullptr, cargv.data(), cenv.data()); err != 0)
    return usage_error(command, "--python " + python + ": cannot run it (" + std::strerror(err) +
                                    "): give an interpreter that has pyarrow and duckdb, e.g. --python "
                                    ".venv/bin/python, or set PTPROF_ANALYSIS_PYTHON");
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace ptprof::cli
