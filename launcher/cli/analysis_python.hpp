// The Python half of ptprof's analysis (`export --parquet`, `query`): a
// module of the `ptprof` package run by an interpreter that has pyarrow and
// DuckDB (`pip install 'ptprof[analysis]'`), with stdio passed through.
#pragma once
#include <string>
#include <vector>

namespace ptprof::cli {

// Runs `python -m <module> <args...>` with ptprof's package first on
// PYTHONPATH and waits: its exit status. `python`: --python, else
// PTPROF_ANALYSIS_PYTHON, else python3. A usage error (2, said on stderr)
// when ptprof's package or the interpreter cannot be found.
int run_analysis_module(const std::string& command, const std::string& python, const std::string& module,
                        const std::vector<std::string>& args);

// The interpreter `run_analysis_module` uses, for --help texts.
inline constexpr const char* kAnalysisPythonHelp =
    "The interpreter that runs it (it must import pyarrow and duckdb: pip install 'ptprof[analysis]'). "
    "Default: PTPROF_ANALYSIS_PYTHON (the wheel's ptprof command sets it to its own Python), else python3 on PATH";

}  // namespace ptprof::cli
