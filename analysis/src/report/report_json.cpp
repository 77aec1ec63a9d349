#include <algorithm>
#include <cmath>
#include <span>

#include "ptprof/analysis/report_format.hpp"
#include "report/report_columns.hpp"
#include "text/text_util.hpp"

namespace ptprof::report {

using namespace detail;
using text::fixed;
using text::json_string;
using text::us;

namespace {

std::string json_value(const Value& v) {
  switch (v.kind) {
    case Value::Text:
      return json_string(v.text);
    case Value::TimeNs:
      return fixed(v.num / 1000.0, 3);
    case Value::Percent:
      return std::isnan(v.num) ? "null" : fixed(v.num, 2);
    case Value::Int:
    case Value::Bytes:
      return std::to_string(v.i);
  }
  return "null";
}

template <typename T, typename F>
std::string json_array(std::span<const T> items, F&& item, const char* indent) {
  if (items.empty()) return "[]";
  std::string out = "[\n";
  for (size_t i = 0; i < items.size(); ++i) out += indent + item(items[i]) + (i + 1 < items.size() ? ",\n" : "\n");
  return out + "  ]";
}

// {"forward_us": ..., ..., "other_us": ...}
std::string phase_times_json(const PhaseTimes& t) {
  std::string out = "{";
  for (size_t p = 0; p < kPhaseCount; ++p)
    out += (p ? ", \"" : "\"") + std::string(phase_json_key(Phase(p))) + "_us\": " + us(t[p]);
  return out + "}";
}

// {"unnamed_events": N, ...}: every field of the ledger, in its order.
std::string losses_json(const trace::Losses& l) {
  std::string out = "{";
  for (const trace::LossField& f : trace::kLossFields)
    out += (out.size() > 1 ? ", \"" : "\"") + std::string(f.name) + "\": " + std::to_string(l.*f.member);
  return out + "}";
}

std::string cost_json(const cost::Tally& c) {
  return "{\"added_ms\": " + fixed(c.added_ns() / 1e6, 6) + ", \"share\": " + fixed(c.share(), 5) +
         ", \"recorded_ms\": " + fixed(double(c.recorded_ns) / 1e6, 6) + ", \"ops\": " + std::to_string(c.ops) +
         ", \"op_ns\": " + fixed(c.ops ? c.op_ns() / double(c.ops) : 0, 1) +
         ", \"records\": " + std::to_string(c.records) +
         ", \"record_ns\": " + fixed(c.records ? c.record_ns() / double(c.records) : 0, 1) +
         ", \"uncalibrated_events\": " + std::to_string(c.uncalibrated) + "}";
}

// The rows with the table's columns as keys; with group_by_stack_n, every
// stack entry, innermost first (the column has the first).
std::string rows_json(const Report& r, const std::vector<Column>& cols, size_t row_limit) {
  const size_t n = row_limit == 0 ? r.rows.size() : std::min(row_limit, r.rows.size());
  return json_array(
      std::span<const Row>(r.rows.data(), n),
      [&](const Row& row) {
        std::string o = "{";
        for (size_t c = 0; c < cols.size(); ++c)
          o += (c ? ", " : "") + json_string(cols[c].json_key) + ": " + json_value(cols[c].get(row, r));
        if (r.has_stack) {
          o += ", \"stack\": [";
          for (size_t e = 0; e < row.stack.size(); ++e) o += (e ? ", " : "") + json_string(row.stack[e]);
          o += "]";
        }
        return o + "}";
      },
      "    ");
}

}  // namespace

// One object: metadata first (what was read, how it was grouped and sorted,
// what was lost), then rows with the table's columns as keys (times in us),
// then steps, then
// the steps split into phases.
std::string render_json(const Report& r, size_t row_limit) {
  const std::vector<Column> cols = columns(r);
  std::string out = "{\n";
  out += "  \"files\": " +
         json_array(
             std::span<const std::string>(r.files), [](const std::string& f) { return json_string(f); }, "    ") +
         ",\n";
  out += "  \"windows\": " +
         json_array(
             std::span<const uint32_t>(r.windows), [](uint32_t w) { return std::to_string(w); }, "    ") +
         ",\n";
  out += "  \"sort_by\": " + json_string(sort_key_name(r.options.sort_by)) + ",\n";
  out += std::string("  \"group_by_input_shape\": ") + (r.options.group_by_input_shape ? "true" : "false") + ",\n";
  out += "  \"events\": " + std::to_string(r.events) + ",\n";
  out += "  \"dropped\": " + std::to_string(r.dropped) + ",\n";
  out += "  \"drops\": " +
         json_array(
             std::span<const ThreadDrops>(r.drops),
             [](const ThreadDrops& d) {
               return "{\"file\": " + json_string(d.path) + ", \"pid\": " + std::to_string(d.pid) +
                      ", \"tid\": " + std::to_string(d.tid) + ", \"thread\": " + json_string(d.thread_name) +
                      ", \"dropped\": " + std::to_string(d.dropped) + "}";
             },
             "    ") +
         ",\n";
  out += "  \"losses\": " + losses_json(r.losses) + ",\n";
  out += "  \"ptprof_cost\": " + cost_json(r.cost) + ",\n";
  out += "  \"self_cpu_time_total_us\": " + fixed(double(r.self_cpu_total_ns) / 1000.0, 3) + ",\n";
  if (r.has_cuda_time)
    out += "  \"self_cuda_time_total_us\": " + fixed(double(r.self_cuda_total_ns) / 1000.0, 3) + ",\n";
  out += "  \"columns\": " +
         json_array(
             std::span<const Column>(cols),
             [](const Column& c) {
               return "{\"title\": " + json_string(c.title) + ", \"key\": " + json_string(c.json_key) + "}";
             },
             "    ") +
         ",\n";
  out += "  \"rows\": " + rows_json(r, cols, row_limit) + ",\n";
  out += render_ranks_json(r.ranks);
  auto step_json = [](const StepRow& s) {
    std::string role = s.role == StepRow::Role::BeforeSteps  ? ", \"role\": \"before step 1\""
                       : s.role == StepRow::Role::AfterSteps ? ", \"role\": \"after the last step\""
                                                             : "";
    return "{\"step\": " + std::to_string(s.step) + ", \"pid\": " + std::to_string(s.pid) +
           ", \"tid\": " + std::to_string(s.tid) + ", \"wall_us\": " + fixed(double(s.wall_ns) / 1000.0, 3) +
           ", \"operators_us\": " + fixed(double(s.operator_ns) / 1000.0, 3) + role +
           (s.partial ? ", \"partial\": true" : "") + "}";
  };
  out += "  \"steps\": " + json_array(std::span<const StepRow>(r.steps), step_json, "    ") + ",\n";
  out += "  \"outside_steps\": " + json_array(std::span<const StepRow>(r.outside_steps), step_json, "    ") + ",\n";
  if (r.gpu.any()) out += "  \"gpu\": " + render_gpu_json(r.gpu) + ",\n";
  if (r.compile.any()) out += "  \"compile\": " + render_compile_json(r.compile) + ",\n";
  out += "  \"phases\": {\"total\": " + phase_times_json(phase_totals(r.phases)) + ",\n    \"steps\": " +
         json_array(
             std::span<const StepPhases>(r.phases),
             [](const StepPhases& s) {
               return "{\"step\": " + std::to_string(s.step) + ", \"pid\": " + std::to_string(s.pid) +
                      ", \"tid\": " + std::to_string(s.tid) + ", \"wall_us\": " + us(s.wall_ns) + ", " +
                      phase_times_json(s.ns).substr(1);
             },
             "      ") +
         "}";
  if (!r.cuda_api.empty()) out += ",\n  \"cuda_api_summary\": " + render_cuda_api_json(r.cuda_api);
  return out + "\n}\n";
}

}  // namespace ptprof::report
