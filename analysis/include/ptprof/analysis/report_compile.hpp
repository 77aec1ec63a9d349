// torch.compile's compile time as a phase of its own (docs/report.md,
// "Compile"): the time in torch's compile-time scopes, `<name>
// (dynamo_timed)`, split by what compiles (Dynamo tracing, AOT autograd,
// Inductor, autotuning, cache loads), per step and in total; and what the
// Python bootstrap tells of each compile as `torch.compile: ...` marks
// (recompiles and graph breaks with torch's reason, cache hits and misses:
// python/ptprof/_boot.py, CompileWatcher).
//
// The compile time of a process is the union of its compile scopes on every
// thread (nested scopes lie inside their outermost one, so nothing counts
// twice). Each instant of it goes to the kind of the innermost scope that
// covers it (a scope no rule names takes its parent's kind), and where
// threads overlap, to the first kind in kCompileClaimOrder.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptprof/trace.hpp"

namespace ptprof::report {

// In the order the report shows them.
enum class CompileKind : uint8_t { Dynamo, AotAutograd, Inductor, Autotuning, Cache, Other };
inline constexpr size_t kCompileKindCount = 6;
using CompileKindTimes = std::array<int64_t, kCompileKindCount>;  // ns, indexed by CompileKind

std::string_view compile_kind_title(CompileKind k);     // "Dynamo tracing"
std::string_view compile_kind_json_key(CompileKind k);  // "dynamo"

// torch's compile-time scopes: utils.dynamo_timed's "<key> (dynamo_timed)".
bool is_compile_scope(std::string_view name);
// The kind a scope's name says (the rule table in report_compile.cpp);
// nullopt: none, the scope is of its parent's kind.
std::optional<CompileKind> compile_kind_of(std::string_view scope_name);

// A mark of the bootstrap's, parsed.
struct CompileNote {
  enum class Kind : uint8_t { Recompile, GraphBreak, CacheHit, CacheMiss };
  Kind kind = Kind::Recompile;
  std::string compile_id;  // Dynamo's "0/1" (frame 0, its second compile); "" for cache notes
  std::string text;        // the reason torch gives; the cache's name for cache notes
};
inline constexpr std::string_view kCompileMarkPrefix = "torch.compile: ";
std::optional<CompileNote> parse_compile_mark(std::string_view name);

// One ProfilerStep#N span's compile time (the Compile phase of its
// StepPhases) and its notes.
struct StepCompile {
  uint64_t step = 0;
  int32_t pid = 0;
  int32_t tid = 0;
  int64_t ns = 0;
  CompileKindTimes kinds{};  // sums to ns
  uint32_t recompiles = 0;
  uint32_t graph_breaks = 0;
  uint32_t cache_hits = 0;
  uint32_t cache_misses = 0;
};

// A recompile or a graph break, where it happened.
struct CompileEventRow {
  CompileNote note;
  int32_t pid = 0;
  std::optional<uint64_t> step;  // nullopt: outside every step (before step 1, after the last)
};

struct CompileReport {
  std::vector<StepCompile> steps;  // every step of a trace with compile scopes or notes, by step, pid, tid
  int64_t total_ns = 0;            // all compile time, in steps or not
  CompileKindTimes kinds{};        // total_ns split
  int64_t outside_steps_ns = 0;    // the part in no step
  uint32_t recompiles = 0, graph_breaks = 0, cache_hits = 0, cache_misses = 0;
  std::vector<CompileEventRow> events;  // recompiles and graph breaks, in time order per trace
  bool any() const { return total_ns > 0 || !events.empty() || cache_hits || cache_misses; }
};

// One trace's; merge() adds another's (the report sorts steps at its end).
CompileReport compile_report(const trace::Trace& t);
void merge(CompileReport& into, CompileReport&& from);

namespace detail {
using Interval = std::pair<int64_t, int64_t>;  // [first, second)
using Intervals = std::vector<Interval>;       // sorted, disjoint
// Per process of `t`: its compile time's intervals by kind (disjoint across
// kinds), and their union.
struct ProcessCompile {
  std::array<Intervals, kCompileKindCount> kinds;
  Intervals all;
};
std::vector<ProcessCompile> compile_spans(const trace::Trace& t);
}  // namespace detail

}  // namespace ptprof::report
