// `ptprof query DATASET`: SQL over a dataset of `ptprof export --parquet`,
// run by DuckDB in ptprof/dataset/query.py, or as a Dask job
// (ptprof/dataset/query_dask.py); the report's sections are SQL files
// (python/ptprof/dataset/sql/*.sql) a user can read and adapt.
#include <filesystem>
#include <memory>

#include "cli/analysis_python.hpp"
#include "cli/commands.hpp"

namespace ptprof::cli {
namespace {

struct QueryArgs {
  std::string dataset;
  std::vector<std::string> sql;
  bool report = false;
  std::string format = "table";
  std::string dask;
  std::string python;
};

int run_query(const QueryArgs& a) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(fs::path(a.dataset) / "runs" / "runs.parquet", ec))
    return usage_error("query", a.dataset +
                                    " is not a dataset (no runs/runs.parquet in it): write one with "
                                    "`ptprof export TRACES --parquet DIR`");
  if (a.sql.empty() == !a.report)
    return usage_error("query", "give --report (the report's sections) or --sql \"SELECT ...\", one of the two");
  if (!a.dask.empty() && !a.report)
    return usage_error("query", "--dask computes the report's sections: give --report with it (--sql runs here)");
  std::vector<std::string> args = {"--dataset", a.dataset, "--format", a.format};
  if (a.report) args.push_back("--report");
  if (!a.dask.empty()) {
    args.push_back("--dask");
    args.push_back(a.dask);
  }
  for (const std::string& q : a.sql) {
    args.push_back("--sql");
    args.push_back(q);
  }
  return run_analysis_module("query", a.python, "ptprof.dataset.query", args);
}

}  // namespace

void add_query(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<QueryArgs>();
  CLI::App* cmd = app.add_subcommand(
      "query",
      "SQL over a dataset that `ptprof export --parquet` wrote, with DuckDB: views named as its tables\n"
      "(ops, steps, gpu, cuda_api, memory, collectives, stacks, processes, threads, windows, runs;\n"
      "docs/dataset.md). --report computes the report's operator table, steps, ranks, step-time\n"
      "stragglers and collective arrivals by SQL, from the files in ptprof/dataset/sql/ (printed with\n"
      "--format json as `ptprof report --format json` names them). With --dask SCHEDULER_ADDRESS the\n"
      "sections are a Dask job: a task per partition (a run's 64-rank bucket) and one reduction per\n"
      "section, on the cluster whose workers see the dataset at the same path (docs/scale.md).");
  cmd->add_option("dataset", args->dataset, "The dataset's directory")->required();
  cmd->add_option("--sql", args->sql, "A query to run (repeat for several), e.g. \"SELECT count(*) FROM ops\"");
  cmd->add_flag("--report", args->report, "The report's sections, computed by SQL");
  cmd->add_option("--dask", args->dask,
                  "A Dask scheduler's address (tcp://HOST:PORT): --report computed on its workers, which need\n"
                  "duckdb and pyarrow, and this Python dask[distributed]");
  cmd->add_option("--format", args->format, "table (default) or json")->check(CLI::IsMember({"table", "json"}));
  cmd->add_option("--python", args->python, kAnalysisPythonHelp);
  cmd->callback([args, &exit_code] { exit_code = run_query(*args); });
}

}  // namespace ptprof::cli
