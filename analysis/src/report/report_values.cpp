// torch's value formatting (_format_time, _format_time_share, _format_memory)
// and the names of the output formats.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ptprof/analysis/report_format.hpp"

namespace ptprof::report {
namespace {

template <typename... Args>
std::string printf_string(const char* fmt, Args... args) {
  char buf[64];
  int n = std::snprintf(buf, sizeof buf, fmt, args...);
  return std::string(buf, n < 0 ? 0 : std::min<size_t>(size_t(n), sizeof buf - 1));
}

}  // namespace

std::optional<Format> parse_format(std::string_view name) {
  if (name == "table") return Format::Table;
  if (name == "csv") return Format::Csv;
  if (name == "json") return Format::Json;
  return std::nullopt;
}

// Python's '{:.3f}' and printf's "%.3f" both round the exact binary value, so
// these match torch digit for digit.
std::string format_time_us(double us) {
  if (us >= 1000.0 * 1000.0) return printf_string("%.3fs", us / (1000.0 * 1000.0));
  if (us >= 1000.0) return printf_string("%.3fms", us / 1000.0);
  return printf_string("%.3fus", us);
}

std::string format_time_share(double part, double total) {
  if (total == 0) return "NaN";
  return printf_string("%.2f%%", part * 100.0 / total);
}

std::string format_memory(int64_t bytes) {
  constexpr double kKb = 1024, kMb = 1024 * kKb, kGb = 1024 * kMb;
  double a = std::fabs(double(bytes));
  if (a >= kGb) return printf_string("%.2f Gb", double(bytes) / kGb);
  if (a >= kMb) return printf_string("%.2f Mb", double(bytes) / kMb);
  if (a >= kKb) return printf_string("%.2f Kb", double(bytes) / kKb);
  return std::to_string(bytes) + " b";
}

}  // namespace ptprof::report
