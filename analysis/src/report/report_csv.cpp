#include <cmath>

#include "ptprof/analysis/report_format.hpp"
#include "ptprof/analysis/report_gpu.hpp"
#include "report/report_columns.hpp"
#include "text/text_util.hpp"

namespace ptprof::report {

using namespace detail;
using text::csv_field;
using text::fixed;

namespace {

// Plain numbers for spreadsheets: times in us (3 decimals: ns resolution),
// percentages without the sign, memory in bytes.
std::string csv_cell(const Value& v) {
  switch (v.kind) {
    case Value::Text:
      return csv_field(v.text);
    case Value::TimeNs:
      return fixed(v.num / 1000.0, 3);
    case Value::Percent:
      return std::isnan(v.num) ? "NaN" : fixed(v.num, 2);
    case Value::Int:
    case Value::Bytes:
      return std::to_string(v.i);
  }
  return {};
}

}  // namespace

std::string render_csv(const Report& r, size_t row_limit) {
  const std::vector<Column> cols = columns(r);
  std::string out;
  for (size_t c = 0; c < cols.size(); ++c) out += (c ? "," : "") + csv_field(cols[c].title);
  out += "\n";
  const size_t n = row_limit == 0 ? r.rows.size() : std::min(row_limit, r.rows.size());
  for (size_t i = 0; i < n; ++i) {
    for (size_t c = 0; c < cols.size(); ++c) out += (c ? "," : "") + csv_cell(cols[c].get(r.rows[i], r));
    out += "\n";
  }
  // Further tables follow, each after an empty line (as `nsys stats --format
  // csv` separates its reports) and a line with its title, so that a reader
  // can tell them apart.
  if (!r.cuda_api.empty()) out += "\nCUDA API summary\n" + render_cuda_api_csv(r.cuda_api);
  if (r.gpu.any()) out += render_gpu_csv(r.gpu);
  return out;
}

}  // namespace ptprof::report
