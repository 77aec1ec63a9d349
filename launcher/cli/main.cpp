// `ptprof`: the launcher and the front end of the analysis library.
#include <cstdio>
#include <exception>
#include <string>

#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "log.hpp"

namespace {

int run_cli(int argc, char** argv) {
  ptprof::launcher::init_logging();
  CLI::App app{
      "ptprof: a profiler for PyTorch programs that needs no change to the program.\n"
      "  ptprof run -- python train.py      profile a job into ./ptprof-out\n"
      "  ptprof report ptprof-out/          operator tables (torch's key_averages)\n"
      "  ptprof info ptprof-out/            what the trace files hold\n"
      "  ptprof export ptprof-out/ --chrome trace.json.gz   for Perfetto UI, chrome://tracing, HTA\n"
      "  ptprof diff before/ after/         the operators that changed most between two runs\n"
      "  ptprof run --on-demand -- python train.py; ptprof trigger --steps 3   capture a running job\n"
      "  ptprof memory ptprof-out/          peaks, live allocations, allocations per op (--profile-memory)\n"
      "  ptprof bridge list                 the per-torch bridges built so far",
      "ptprof"};
  app.set_version_flag("--version", std::string("ptprof ") + PTPROF_VERSION);
  app.require_subcommand(1);
  int exit_code = 0;
  ptprof::cli::add_run(app, exit_code);
  ptprof::cli::add_report(app, exit_code);
  ptprof::cli::add_info(app, exit_code);
  ptprof::cli::add_bridge(app, exit_code);
  ptprof::cli::add_export(app, exit_code);
  ptprof::cli::add_query(app, exit_code);
  ptprof::cli::add_diff(app, exit_code);
  ptprof::cli::add_trigger(app, exit_code);
  ptprof::cli::add_sessions(app, exit_code);
  ptprof::cli::add_memory(app, exit_code);
  ptprof::cli::add_flamegraph(app, exit_code);
  // The only arguments before a command are options (--help, --version):
  // a word there is a command, known or not.
  if (argc > 1 && argv[1][0] != '-') {
    const CLI::App& commands = app;
    bool known = false;
    std::string names;
    for (const CLI::App* sub : commands.get_subcommands([](const CLI::App*) { return true; })) {
      known |= sub->check_name(argv[1]);
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      spdlog::error("unknown command '{}'; commands are: {} (ptprof --help says more)", argv[1], names);
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    // CLI11 uses 0 for --help/--version and 106/109/... for errors; users get 2.
    return rc == 0 ? 0 : 2;
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  // Out of memory, say: a message and status 1 rather than std::terminate.
  try {
    return run_cli(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ptprof: error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "ptprof: error: unknown exception\n");
  }
  return 1;
}
