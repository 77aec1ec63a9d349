// `ptprof flamegraph FILE|DIR... --metric M -o out.txt`: folded stacks of the
// ops of traces recorded with --with-stack (analysis/.../flamegraph.hpp).
#include <cstdio>
#include <memory>

#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "cli/report_inputs.hpp"
#include "ptprof/analysis/flamegraph.hpp"
#include "ptprof/analysis/output_file.hpp"

namespace ptprof::cli {
namespace {

struct FlamegraphArgs {
  std::vector<std::string> inputs;
  std::string metric = "self_cpu";
  std::string output;
};

int run_flamegraph(const FlamegraphArgs& args) {
  const auto metric = stacks::flamegraph::parse_metric(args.metric);
  if (!metric)
    return usage_error("flamegraph",
                       "unknown --metric '" + args.metric + "'; accepted: self_cpu, self_cuda, alloc_bytes");
  stacks::flamegraph::Builder builder(*metric);
  Status read =
      read_traces(args.inputs, "flamegraph", [&](const std::string&, const trace::Trace& t) { builder.add(t); });
  if (!read) return usage_error("flamegraph", read.message());
  if (builder.ops_with_stack() == 0)
    spdlog::warn("flamegraph: no op in the inputs carries a stack (record with `ptprof run --with-stack`)");
  const std::string out = std::move(builder).finish();
  if (!args.output.empty() && args.output != "-") {
    const Status written = exporting::write_file(args.output, out);
    return written ? 0 : usage_error("flamegraph", "cannot write " + written.message());
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (std::fflush(stdout) != 0) {
    spdlog::error("flamegraph: writing the folded stacks failed");
    return 1;
  }
  return 0;
}

}  // namespace

void add_flamegraph(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<FlamegraphArgs>();
  CLI::App* cmd =
      app.add_subcommand("flamegraph",
                         "Folded stacks of the ops of traces recorded with `ptprof run --with-stack` (flamegraph.pl,\n"
                         "speedscope and Perfetto read them): one line per distinct stack, its frames outermost first\n"
                         "(Python frames, then the native frames below the interpreter as 'function [module]', named\n"
                         "from the modules' ELF symbols), the op's name last, then the metric summed over its ops.");
  cmd->add_option("inputs", args->inputs, "Trace files or directories (their *.bin files)")->required();
  cmd->add_option("--metric", args->metric,
                  "self_cpu (ns of each op's self CPU time), self_cuda (ns of the GPU work each op launched "
                  "itself) or alloc_bytes (bytes each op allocated itself, with --profile-memory)")
      ->capture_default_str();
  cmd->add_option("-o,--output", args->output, "Where to write the folded stacks (default: stdout)");
  cmd->callback([args, &exit_code] { exit_code = run_flamegraph(*args); });
}

}  // namespace ptprof::cli
