// The CUDA API summary of `ptprof report`, in the manner of `nsys stats`'
// cuda_api_sum: one row per entry point, over every recorded call.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ptprof/trace.hpp"

namespace ptprof::report {

struct CudaApiRow {
  std::string name;
  uint64_t calls = 0;
  int64_t total_ns = 0;
  double avg_ns = 0;
  double median_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  double stddev_ns = 0;     // sample standard deviation (n - 1), 0 for one call
  double time_percent = 0;  // of the total time of all rows
};

// Collects call durations trace by trace. The calls are the hooked calls
// (EventKind::CudaApi) and the calls only CUPTI recorded (EventKind::CuptiApi):
// the launcher folds a hooked call and CUPTI's record of it into one event
// (launcher/collect/call_fold.hpp), so each call counts once, and a program
// whose runtime the hooks cannot see (a static runtime) still gets the table.
// Rows sort by total time, largest first, then by name.
class CudaApiSummary {
 public:
  void add(const trace::Trace& t);
  std::vector<CudaApiRow> rows() const;

 private:
  std::unordered_map<std::string, std::vector<int64_t>> durations_;
};

// The summary as a table (nsys's columns and number style), CSV (ns) and a
// JSON array; "" / "[]" when there are no rows.
std::string render_cuda_api_table(const std::vector<CudaApiRow>& rows);
std::string render_cuda_api_csv(const std::vector<CudaApiRow>& rows);
std::string render_cuda_api_json(const std::vector<CudaApiRow>& rows);

}  // namespace ptprof::report
