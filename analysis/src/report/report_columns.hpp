// The report's columns, in torch's order, as one list every renderer walks:
// adding a column (CUDA, memory, stacks) here adds it to table, CSV and JSON.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ptprof/analysis/report.hpp"

namespace ptprof::report::detail {

struct Value {
  enum Kind { Text, TimeNs, Percent, Int, Bytes } kind = Text;
  double num = 0;         // TimeNs: ns; Percent: percent, NaN when the base is 0
  int64_t i = 0;          // Int, Bytes
  std::string_view text;  // Text
};

struct Column {
  std::string_view title;     // torch's header; also the CSV header
  std::string_view json_key;  // snake_case, with its unit (_us, _pct, _bytes)
  Value (*get)(const Row&, const Report&);
};

// The columns torch would print for this report: CUDA ones once any row has
// CUDA time, memory ones once any has memory, Input Shapes when grouped by
// shape and some row has shapes.
std::vector<Column> columns(const Report& r);

// A value as the table prints it: times as torch's _format_time, percents
// with two decimals ("NaN" without a base), memory as torch's _format_memory.
std::string format_value(const Value& v);

}  // namespace ptprof::report::detail
