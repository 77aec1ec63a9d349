// Renders a Report as torch's table, CSV or JSON. All three take their
// columns from one list (see report_columns in src/), so a column added there
// (CUDA, memory, source location) appears in every format.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "ptprof/analysis/report.hpp"

namespace ptprof::report {

enum class Format { Table, Csv, Json };
std::optional<Format> parse_format(std::string_view name);

// torch's _format_time: "1.234s", "12.345ms", "123.456us".
std::string format_time_us(double us);
// torch's _format_time_share: "12.34%", or "NaN" when the total is 0.
std::string format_time_share(double part, double total);
// torch's _format_memory: "1.50 Gb", "2.00 Mb", "3.00 Kb", "12 b".
std::string format_memory(int64_t bytes);

// row_limit 0 = every row.
std::string render_table(const Report& r, size_t row_limit);
std::string render_csv(const Report& r, size_t row_limit);
std::string render_json(const Report& r, size_t row_limit);

// torch.compile's section (report_compile.hpp): "" when the inputs hold no
// compile; the JSON object of the report's "compile" key.
std::string render_compile_table(const CompileReport& c);
std::string render_compile_json(const CompileReport& c);

// "WARNING: N events were dropped ..." and one line per thread, or "" when
// nothing was dropped. render_table includes it; CSV callers print it apart.
std::string drops_warning(const Report& r);

}  // namespace ptprof::report
