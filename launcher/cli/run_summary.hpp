// What `ptprof run` prints when the run is over: the run's result, not a
// diagnostic, so it is printed whatever the log level, losses included, so
// that nothing is lost in silence.
#pragma once
#include <chrono>
#include <cstdint>

#include "collect/collector.hpp"
#include "collect/file_window_sink.hpp"
#include "ptprof/config.hpp"

namespace ptprof::cli {

// `cut_off`: processes still running `grace` after the target exited, whose
// later events are not in the trace.
// `config`: the run's step rule and schedule, for the lines on steps.
void print_run_summary(const launcher::Totals& t, const launcher::FileWindowSink& sink, uint32_t cut_off,
                       std::chrono::seconds grace, const Config& config);

}  // namespace ptprof::cli
