// The compile phase (report_compile.hpp): compile scopes into intervals by
// kind, per process; steps' shares of them; the bootstrap's notes.
#include "ptprof/analysis/report_compile.hpp"

#include <algorithm>
#include <tuple>

#include "ptprof/saturating.hpp"
#include "report/intervals.hpp"

namespace ptprof::report {

namespace {

using detail::Interval;
using detail::Intervals;
using ptprof::detail::saturating_add;

constexpr std::string_view kScopeSuffix = " (dynamo_timed)";

// The rules, first match wins, on the scope's name without its suffix; a
// name no rule matches takes its parent's kind (its outermost scope's: Other
// when that one matches none). torch 2.x's keys (torch/_dynamo, _functorch,
// _inductor: dynamo_timed's first argument): the outermost of a forward
// compile is "_compile.compile_inner" (Dynamo's frame compile), of a lazy
// backward compile "backward._backward_impl" (AOT autograd's runtime
// wrapper); Dynamo hands its graph to AOT autograd
// ("create_aot_dispatcher_function", "aot_trace_joint_graph"), which hands
// each graph to Inductor ("compile_fx.<locals>.fw_compiler_base",
// "compile_fx_inner", "GraphLowering.*", "Scheduler.*", "*Codegen*",
// "async_compile.*", "PyCodeCache.*"). Checked in this order, so that an
// autotuner's or a cache's scope inside Inductor counts as such. The
// report's documentation (docs/report.md, "Compile") lists these rules.
struct Rule {
  std::string_view contains;
  CompileKind kind;
};
constexpr Rule kRules[] = {
    // Autotuning: Inductor's benchmarks of candidate kernels and configs.
    {"autotun", CompileKind::Autotuning},
    {"Autotun", CompileKind::Autotuning},
    {"benchmark", CompileKind::Autotuning},
    {"do_bench", CompileKind::Autotuning},
    {"select_algorithm", CompileKind::Autotuning},
    // Cache: looking up and loading compiled artifacts (AOTAutogradCache.*,
    // FxGraphCache.*, TritonBundler.*, CompiledArtifact.load, ...).
    {"AOTAutogradCache", CompileKind::Cache},
    {"FxGraphCache", CompileKind::Cache},
    {"TritonBundler", CompileKind::Cache},
    {"CompiledArtifact.load", CompileKind::Cache},
    {"GraphPickler.loads", CompileKind::Cache},
    {"cache_lookup", CompileKind::Cache},
    {"CacheBase", CompileKind::Cache},        // the cache key's system part (triton_key)
    {"cache_torch_key", CompileKind::Cache},  // the cache key's torch part
    // Inductor: lowering, scheduling, code generation, compiling the code.
    {"compile_fx", CompileKind::Inductor},
    {"inductor", CompileKind::Inductor},
    {"GraphLowering", CompileKind::Inductor},
    {"Scheduler", CompileKind::Inductor},
    {"Codegen", CompileKind::Inductor},
    {"codegen", CompileKind::Inductor},
    {"Wrapper", CompileKind::Inductor},
    {"async_compile", CompileKind::Inductor},
    {"PyCodeCache", CompileKind::Inductor},
    {"compile_file", CompileKind::Inductor},
    {"kernel", CompileKind::Inductor},
    // AOT autograd: the joint graph, partitioning, the backward's runtime
    // compile; and Dynamo's call of its backend (inductor's entry is AOT
    // autograd's; what runs in it that no other rule names is that).
    {"aot_", CompileKind::AotAutograd},
    {"call_user_compiler", CompileKind::AotAutograd},
    {"AOTDispatcher", CompileKind::AotAutograd},
    {"create_aot_dispatcher_function", CompileKind::AotAutograd},
    {"backward._backward_impl", CompileKind::AotAutograd},
    {"min_cut", CompileKind::AotAutograd},
    {"partition", CompileKind::AotAutograd},
    // Dynamo: tracing the frame's bytecode, its guards, its output graph.
    {"_compile.", CompileKind::Dynamo},
    {"compile_inner", CompileKind::Dynamo},
    {"bytecode", CompileKind::Dynamo},
    {"guards", CompileKind::Dynamo},
    {"OutputGraph", CompileKind::Dynamo},
    {"fullgraph_capture", CompileKind::Dynamo},
    {"compile_attempt", CompileKind::Dynamo},
};

// Where threads' compile time overlaps, the instant goes to the first of
// these (the innermost work first: what runs inside another kind's scope).
constexpr CompileKind kClaimOrder[] = {CompileKind::Autotuning,  CompileKind::Cache,  CompileKind::Inductor,
                                       CompileKind::AotAutograd, CompileKind::Dynamo, CompileKind::Other};

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool is_timed(const trace::Event& e) {
  return (e.kind == trace::EventKind::Op || e.kind == trace::EventKind::Range) && !(e.flags & trace::kAsync);
}

// A thread's compile scopes, by start then longer first: each one's self
// time (less its compile-scope children) to its kind.
void self_segments(std::vector<std::tuple<int64_t, int64_t, uint32_t>> scopes, const trace::Trace& t,
                   std::array<Intervals, kCompileKindCount>& out) {
  std::sort(scopes.begin(), scopes.end(), [](const auto& a, const auto& b) {
    return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) < std::get<0>(b) : std::get<1>(a) > std::get<1>(b);
  });
  struct Open {
    int64_t end, cursor;
    CompileKind kind;
  };
  std::vector<Open> stack;
  auto close = [&] {
    const Open o = stack.back();
    stack.pop_back();
    out[size_t(o.kind)].emplace_back(o.cursor, o.end);
    if (!stack.empty()) stack.back().cursor = std::max(stack.back().cursor, o.end);
  };
  for (const auto& [start, scope_end, name] : scopes) {
    int64_t end = scope_end;
    while (!stack.empty() && stack.back().end <= start) close();
    CompileKind kind = stack.empty() ? CompileKind::Other : stack.back().kind;
    if (!stack.empty()) {
      Open& parent = stack.back();
      end = std::min(end, parent.end);  // a partial overlap counts inside the parent only
      if (start > parent.cursor) out[size_t(parent.kind)].emplace_back(parent.cursor, start);
      parent.cursor = std::max(parent.cursor, start);
    }
    if (auto k = compile_kind_of(t.strings[name])) kind = *k;
    stack.push_back(Open{end, start, kind});
  }
  while (!stack.empty()) close();
}

}  // namespace

std::string_view compile_kind_title(CompileKind k) {
  switch (k) {
    case CompileKind::Dynamo:
      return "Dynamo tracing";
    case CompileKind::AotAutograd:
      return "AOT autograd";
    case CompileKind::Inductor:
      return "Inductor";
    case CompileKind::Autotuning:
      return "Autotuning";
    case CompileKind::Cache:
      return "Cache loads";
    case CompileKind::Other:
      return "Other";
  }
  return "";
}

std::string_view compile_kind_json_key(CompileKind k) {
  switch (k) {
    case CompileKind::Dynamo:
      return "dynamo";
    case CompileKind::AotAutograd:
      return "aot_autograd";
    case CompileKind::Inductor:
      return "inductor";
    case CompileKind::Autotuning:
      return "autotuning";
    case CompileKind::Cache:
      return "cache";
    case CompileKind::Other:
      return "other";
  }
  return "";
}

bool is_compile_scope(std::string_view name) {
  return name.size() > kScopeSuffix.size() && name.substr(name.size() - kScopeSuffix.size()) == kScopeSuffix;
}

std::optional<CompileKind> compile_kind_of(std::string_view scope_name) {
  std::string_view key = scope_name;
  if (is_compile_scope(key)) key.remove_suffix(kScopeSuffix.size());
  for (const Rule& r : kRules)
    if (key.find(r.contains) != std::string_view::npos) return r.kind;
  return std::nullopt;
}

std::optional<CompileNote> parse_compile_mark(std::string_view name) {
  if (!starts_with(name, kCompileMarkPrefix)) return std::nullopt;
  name.remove_prefix(kCompileMarkPrefix.size());
  constexpr std::pair<std::string_view, CompileNote::Kind> kWords[] = {
      {"recompile", CompileNote::Kind::Recompile},
      {"graph break", CompileNote::Kind::GraphBreak},
      {"cache hit: ", CompileNote::Kind::CacheHit},
      {"cache miss: ", CompileNote::Kind::CacheMiss},
  };
  for (const auto& [word, kind] : kWords) {
    if (!starts_with(name, word)) continue;
    CompileNote n;
    n.kind = kind;
    std::string_view rest = name.substr(word.size());
    if (kind == CompileNote::Kind::CacheHit || kind == CompileNote::Kind::CacheMiss) {
      n.text = std::string(rest);
      return n;
    }
    // " [<compile id>]: <reason>"
    if (starts_with(rest, " [")) {
      const size_t close = rest.find("]: ");
      if (close == std::string_view::npos) return std::nullopt;
      n.compile_id = std::string(rest.substr(2, close - 2));
      rest.remove_prefix(close + 3);
    } else if (starts_with(rest, ": ")) {
      rest.remove_prefix(2);
    } else {
      return std::nullopt;
    }
    n.text = std::string(rest);
    return n;
  }
  return std::nullopt;
}

namespace {

// What each string of `t` names for the compile: a scope, a note, neither.
// Read once per string, so that a trace without a compile (nearly all) costs
// a pass over its strings, not over its events.
enum NameUse : uint8_t { kNone = 0, kScope = 1, kNote = 2 };
std::vector<uint8_t> name_uses(const trace::Trace& t, bool* any_scope, bool* any_note) {
  std::vector<uint8_t> uses(t.strings.size(), kNone);
  *any_scope = *any_note = false;
  for (size_t i = 0; i < t.strings.size(); ++i) {
    if (is_compile_scope(t.strings[i])) {
      uses[i] = kScope;
      *any_scope = true;
    } else if (starts_with(t.strings[i], kCompileMarkPrefix)) {
      uses[i] = kNote;
      *any_note = true;
    }
  }
  return uses;
}

std::vector<detail::ProcessCompile> spans_of(const trace::Trace& t, const std::vector<uint8_t>& uses) {
  std::vector<std::vector<std::tuple<int64_t, int64_t, uint32_t>>> by_thread(t.threads.size());
  bool any = false;
  for (const trace::Event& e : t.events) {
    if (e.thread >= t.threads.size() || e.name >= uses.size() || uses[e.name] != kScope || !is_timed(e)) continue;
    by_thread[e.thread].emplace_back(e.start_ns, std::max(e.start_ns, e.end_ns), e.name);
    any = true;
  }
  std::vector<detail::ProcessCompile> out(t.processes.size());
  if (!any) return out;
  for (size_t th = 0; th < by_thread.size(); ++th) {
    const uint32_t p = t.threads[th].process;
    if (by_thread[th].empty() || p >= out.size()) continue;
    self_segments(std::move(by_thread[th]), t, out[p].kinds);
  }
  for (detail::ProcessCompile& pc : out) {
    Intervals all;
    for (Intervals& k : pc.kinds) {
      k = detail::merged(std::move(k));
      all.insert(all.end(), k.begin(), k.end());
    }
    pc.all = detail::merged(std::move(all));
  }
  return out;
}

}  // namespace

std::vector<detail::ProcessCompile> detail::compile_spans(const trace::Trace& t) {
  bool any_scope = false, any_note = false;
  const std::vector<uint8_t> uses = name_uses(t, &any_scope, &any_note);
  if (!any_scope) return std::vector<ProcessCompile>(t.processes.size());
  return spans_of(t, uses);
}

namespace {

// A process's kinds clipped to [lo, hi), claimed in kClaimOrder; the sum is
// the union's length there.
CompileKindTimes claim_kinds(const detail::ProcessCompile& pc, int64_t lo, int64_t hi) {
  std::array<Intervals, kCompileKindCount> parts;
  std::array<const Intervals*, kCompileKindCount> ordered{};
  for (size_t i = 0; i < kCompileKindCount; ++i) {
    const size_t k = size_t(kClaimOrder[i]);
    parts[k] = detail::clipped(pc.kinds[k], lo, hi);
    ordered[i] = &parts[k];
  }
  Intervals claimed;
  const auto got = detail::claim(ordered, claimed);
  CompileKindTimes out{};
  for (size_t i = 0; i < kCompileKindCount; ++i) out[size_t(kClaimOrder[i])] = got[i];
  return out;
}

int64_t sum(const CompileKindTimes& k) {
  int64_t n = 0;
  for (int64_t v : k) n = saturating_add(n, v);
  return n;
}

}  // namespace

CompileReport compile_report(const trace::Trace& t) {
  CompileReport r;
  bool any_scope = false, any_note = false;
  const std::vector<uint8_t> uses = name_uses(t, &any_scope, &any_note);
  if (!any_scope && !any_note) return r;
  std::vector<detail::ProcessCompile> spans =
      any_scope ? spans_of(t, uses) : std::vector<detail::ProcessCompile>(t.processes.size());
  // The notes, by process.
  std::vector<std::vector<std::pair<int64_t, CompileNote>>> notes(t.processes.size());
  any_note = false;
  for (const trace::Event& e : t.events) {
    if (e.kind != trace::EventKind::Mark || e.thread >= t.threads.size() || e.name >= uses.size() ||
        uses[e.name] != kNote)
      continue;
    const uint32_t p = t.threads[e.thread].process;
    if (p >= notes.size()) continue;
    if (auto n = parse_compile_mark(t.strings[e.name])) {
      notes[p].emplace_back(e.start_ns, std::move(*n));
      any_note = true;
    }
  }
  const bool any_time = std::any_of(spans.begin(), spans.end(), [](const auto& s) { return !s.all.empty(); });
  if (!any_time && !any_note) return r;

  // Whole-run totals: the same claim over all of time.
  for (size_t p = 0; p < spans.size(); ++p) {
    const CompileKindTimes all = claim_kinds(spans[p], INT64_MIN, INT64_MAX);
    for (size_t k = 0; k < kCompileKindCount; ++k) r.kinds[k] = saturating_add(r.kinds[k], all[k]);
  }
  r.total_ns = sum(r.kinds);

  // Every step of the trace, with its share; the notes go to the step of
  // their process whose span holds them.
  std::vector<std::vector<size_t>> steps_of(t.processes.size());
  int64_t in_steps = 0;
  for (const trace::Event& e : t.events) {
    if (!trace::is_step(e) || e.thread >= t.threads.size()) continue;
    const uint32_t p = t.threads[e.thread].process;
    if (p >= t.processes.size()) continue;
    StepCompile s;
    s.step = e.arg;
    s.pid = t.processes[p].pid;
    s.tid = t.threads[e.thread].tid;
    s.kinds = claim_kinds(spans[p], e.start_ns, std::max(e.start_ns, e.end_ns));
    s.ns = sum(s.kinds);
    in_steps = saturating_add(in_steps, s.ns);
    steps_of[p].push_back(r.steps.size());
    r.steps.push_back(s);
  }
  std::vector<std::pair<int64_t, int64_t>> step_span(r.steps.size());
  {
    size_t i = 0;
    for (const trace::Event& e : t.events) {
      if (!trace::is_step(e) || e.thread >= t.threads.size() || t.threads[e.thread].process >= t.processes.size())
        continue;
      step_span[i++] = {e.start_ns, std::max(e.start_ns, e.end_ns)};
    }
  }
  r.outside_steps_ns = std::max<int64_t>(0, r.total_ns - in_steps);

  for (size_t p = 0; p < notes.size(); ++p) {
    std::sort(notes[p].begin(), notes[p].end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [at, note] : notes[p]) {
      StepCompile* step = nullptr;
      for (size_t i : steps_of[p])
        if (step_span[i].first <= at && at < step_span[i].second) {
          step = &r.steps[i];
          break;
        }
      switch (note.kind) {
        case CompileNote::Kind::Recompile:
          ++r.recompiles;
          if (step) ++step->recompiles;
          break;
        case CompileNote::Kind::GraphBreak:
          ++r.graph_breaks;
          if (step) ++step->graph_breaks;
          break;
        case CompileNote::Kind::CacheHit:
          ++r.cache_hits;
          if (step) ++step->cache_hits;
          continue;  // counted, not listed
        case CompileNote::Kind::CacheMiss:
          ++r.cache_misses;
          if (step) ++step->cache_misses;
          continue;
      }
      CompileEventRow row;
      row.pid = t.processes[p].pid;
      if (step) row.step = step->step;
      row.note = std::move(note);
      r.events.push_back(std::move(row));
    }
  }
  return r;
}

void merge(CompileReport& into, CompileReport&& from) {
  if (!from.any() && from.steps.empty()) return;
  for (size_t k = 0; k < kCompileKindCount; ++k) into.kinds[k] = saturating_add(into.kinds[k], from.kinds[k]);
  into.total_ns = saturating_add(into.total_ns, from.total_ns);
  into.outside_steps_ns = saturating_add(into.outside_steps_ns, from.outside_steps_ns);
  into.recompiles += from.recompiles;
  into.graph_breaks += from.graph_breaks;
  into.cache_hits += from.cache_hits;
  into.cache_misses += from.cache_misses;
  into.steps.insert(into.steps.end(), from.steps.begin(), from.steps.end());
  for (CompileEventRow& e : from.events) into.events.push_back(std::move(e));
}

}  // namespace ptprof::report
