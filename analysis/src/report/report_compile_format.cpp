// The compile section of the report as text and JSON (report_compile.hpp
// computes it; docs/report.md, "Compile", describes it).
#include <algorithm>
#include <string>
#include <vector>

#include "ptprof/analysis/report_format.hpp"
#include "text/text_util.hpp"

namespace ptprof::report {

using namespace detail;
using text::append_right;
using text::json_string;
using text::us;
using text::utf8_length;

namespace {

std::string compile_time_text(int64_t ns) { return format_time_us(double(ns) / 1000.0); }

std::string_view note_word(CompileNote::Kind k) {
  switch (k) {
    case CompileNote::Kind::Recompile:
      return "recompile";
    case CompileNote::Kind::GraphBreak:
      return "graph break";
    case CompileNote::Kind::CacheHit:
      return "cache hit";
    case CompileNote::Kind::CacheMiss:
      return "cache miss";
  }
  return "";
}

// Right-aligned columns under their titles, dashed lines around the titles
// and after the rows, as the report's other tables.
std::string compile_grid(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size() && c < widths.size(); ++c) widths[c] = std::max(widths[c], utf8_length(r[c]));
  std::string sep;
  for (size_t w : widths) sep.append(w, '-').append(2, ' ');
  sep += "\n";
  std::string out = sep;
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t c = 0; c < widths.size(); ++c) {
      append_right(out, c < rows[i].size() ? rows[i][c] : std::string(), widths[c]);
      out.append(2, ' ');
    }
    out += "\n";
    if (i == 0 || i + 2 == rows.size()) out += sep;  // the total apart
  }
  return out + sep;
}

std::string where(const CompileEventRow& e) {
  return e.step ? "step " + std::to_string(*e.step) : std::string("outside the steps");
}

}  // namespace

std::string render_compile_table(const CompileReport& c) {
  if (!c.any()) return {};
  std::vector<std::vector<std::string>> rows{{"Compile time", "Time", "Share"}};
  for (size_t k = 0; k < kCompileKindCount; ++k)
    rows.push_back({std::string(compile_kind_title(CompileKind(k))), compile_time_text(c.kinds[k]),
                    format_time_share(double(c.kinds[k]), double(c.total_ns))});
  rows.push_back({"Total", compile_time_text(c.total_ns), format_time_share(double(c.total_ns), double(c.total_ns))});
  std::string out = "\ntorch.compile (the compile phase: torch's \"(dynamo_timed)\" scopes; outside the steps: " +
                    compile_time_text(c.outside_steps_ns) + ")\n" + compile_grid(rows);
  out += "Recompiles: " + std::to_string(c.recompiles) + ", graph breaks: " + std::to_string(c.graph_breaks) +
         ", cache hits: " + std::to_string(c.cache_hits) + ", cache misses: " + std::to_string(c.cache_misses) + "\n";
  for (const CompileEventRow& e : c.events)
    out += "  " + where(e) + " (pid " + std::to_string(e.pid) + "): " + std::string(note_word(e.note.kind)) +
           (e.note.compile_id.empty() ? "" : " [" + e.note.compile_id + "]") + ": " + e.note.text + "\n";
  return out;
}

std::string render_compile_json(const CompileReport& c) {
  auto kinds = [](const CompileKindTimes& t) {
    std::string out;
    for (size_t k = 0; k < kCompileKindCount; ++k)
      out += ", \"" + std::string(compile_kind_json_key(CompileKind(k))) + "_us\": " + us(t[k]);
    return out;
  };
  auto counts = [](uint32_t recompiles, uint32_t breaks, uint32_t hits, uint32_t misses) {
    return ", \"recompiles\": " + std::to_string(recompiles) + ", \"graph_breaks\": " + std::to_string(breaks) +
           ", \"cache_hits\": " + std::to_string(hits) + ", \"cache_misses\": " + std::to_string(misses);
  };
  std::string out = "{\"total_us\": " + us(c.total_ns) + ", \"outside_steps_us\": " + us(c.outside_steps_ns) +
                    kinds(c.kinds) + counts(c.recompiles, c.graph_breaks, c.cache_hits, c.cache_misses) +
                    ",\n    \"steps\": [";
  for (size_t i = 0; i < c.steps.size(); ++i) {
    const StepCompile& s = c.steps[i];
    out += std::string(i ? ",\n      " : "\n      ") + "{\"step\": " + std::to_string(s.step) +
           ", \"pid\": " + std::to_string(s.pid) + ", \"tid\": " + std::to_string(s.tid) +
           ", \"compile_us\": " + us(s.ns) + kinds(s.kinds) +
           counts(s.recompiles, s.graph_breaks, s.cache_hits, s.cache_misses) + "}";
  }
  out += c.steps.empty() ? "]" : "\n    ]";
  out += ",\n    \"events\": [";
  for (size_t i = 0; i < c.events.size(); ++i) {
    const CompileEventRow& e = c.events[i];
    std::string kind(note_word(e.note.kind));
    std::replace(kind.begin(), kind.end(), ' ', '_');
    out += std::string(i ? ",\n      " : "\n      ") + "{\"kind\": " + json_string(kind) +
           ", \"step\": " + (e.step ? std::to_string(*e.step) : std::string("null")) +
           ", \"pid\": " + std::to_string(e.pid) + ", \"compile_id\": " + json_string(e.note.compile_id) +
           ", \"reason\": " + json_string(e.note.text) + "}";
  }
  out += c.events.empty() ? "]" : "\n    ]";
  return out + "}";
}

}  // namespace ptprof::report
