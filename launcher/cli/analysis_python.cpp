#include "cli/analysis_python.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cli/commands.hpp"
#include "process/install_paths.hpp"

extern char** environ;

namespace ptprof::cli {

int run_analysis_module(const std::string& command, const std::string& python_opt, const std::string& module,
                        const std::vector<std::string>& args) {
  auto paths = launcher::find_install_paths();
  if (!paths) return usage_error(command, paths.error());
  if (paths->python_dir.empty())
    return usage_error(command,
                       "cannot find ptprof's Python package (ptprof/" + module.substr(7) + ".py) next to this ptprof");
  std::string python = python_opt;
  if (python.empty()) {
    const char* env = std::getenv("PTPROF_ANALYSIS_PYTHON");
    python = env && *env ? env : "python3";
  }
  std::vector<std::string> argv = {python, "-m", module, "--ptprof", paths->launcher};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "PYTHONPATH=", 11) != 0) env.emplace_back(*e);
  const char* old = std::getenv("PYTHONPATH");
  env.push_back("PYTHONPATH=" + paths->python_dir + (old && *old ? ":" + std::string(old) : ""));
  std::vector<char*> cargv, cenv;
  for (auto& s : argv) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  for (auto& s : env) cenv.push_back(s.data());
  cenv.push_back(nullptr);
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
