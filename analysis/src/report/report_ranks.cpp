#include "ptprof/analysis/report_ranks.hpp"

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "ptprof/analysis/report_format.hpp"
#include "ptprof/process_role.hpp"
#include "ptprof/saturating.hpp"
#include "report/outermost.hpp"
#include "report/text_util.hpp"

namespace ptprof::report {

using namespace detail;

bool is_collective(std::string_view n) {
  for (std::string_view prefix : {"c10d::", "gloo:", "nccl:", "mpi:", "ucc:", "record_param_comms"})
    if (n.substr(0, prefix.size()) == prefix) return true;
  return false;
}

int64_t RankRow::step_total_ns() const {
  int64_t total = 0;
  for (const auto& [step, ns] : step_ns) total += ns;
  return total;
}

int64_t RankRow::step_max_ns() const {
  int64_t m = 0;
  for (const auto& [step, ns] : step_ns) m = std::max(m, ns);
  return m;
}

namespace {

// A process is the same in every window file: same host, pid and start.
using ProcessKey = std::tuple<std::string, int32_t, int64_t>;

struct CollectiveTotals {
  uint64_t calls = 0;
  int64_t ns = 0;
};

// A collective call's start, in the step that holds it.
struct Arrival {
  uint64_t step = 0;
  int64_t wall_ns = 0;
  std::string name;
};

struct ProcessState {
  ProcessRow row;
  std::unordered_map<std::string, CollectiveTotals> collectives;
  // Outermost collective calls: c10d's ops, and the process groups' work.
  std::vector<Arrival> c10d_calls, work_calls;
};

bool is_c10d_call(std::string_view n) { return n.substr(0, 6) == "c10d::"; }

// The step (its number) whose span holds `ns` in a process's steps of one
// trace, sorted by start; 0 when none does.
uint64_t step_at(const std::vector<std::tuple<int64_t, int64_t, uint64_t>>& steps, int64_t ns) {
  auto it =
      std::upper_bound(steps.begin(), steps.end(), ns, [](int64_t v, const auto& s) { return v < std::get<0>(s); });
  if (it == steps.begin()) return 0;
  --it;
  return ns < std::get<1>(*it) ? std::get<2>(*it) : 0;
}

int64_t duration(const trace::Event& e) { return std::max<int64_t>(0, e.end_ns - e.start_ns); }

int64_t median(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

struct RankSummaryBuilder::Impl {
  std::map<ProcessKey, ProcessState> processes;

  std::vector<ProcessState*> register_processes(const trace::Trace& t) {
    std::vector<ProcessState*> of_process(t.processes.size());
    for (size_t i = 0; i < t.processes.size(); ++i) {
      const trace::Process& p = t.processes[i];
      const std::string& host = p.host.empty() ? t.header.host : p.host;
      ProcessState& s = processes[{host, p.pid, p.start_ns}];
      ProcessRow& r = s.row;
      r.host = host;
      r.pid = p.pid;
      r.ppid = p.ppid;
      r.rank = p.rank;
      r.local_rank = p.local_rank;
      r.world_size = p.world_size;
      r.cmdline = p.cmdline;
      if (p.role != 0) {
        r.agent_role = p.role;
        r.role_index = p.role_index;
      }
      of_process[i] = &s;
    }
    return of_process;
  }

  void add_counted(const trace::Trace& t, const std::vector<ProcessEventCounts>& counts) {
    std::vector<ProcessState*> of_process = register_processes(t);
    for (size_t pi = 0; pi < counts.size() && pi < of_process.size(); ++pi) {
      const ProcessEventCounts& c = counts[pi];
      ProcessRow& r = of_process[pi]->row;
      r.events += c.events;
      r.ops += c.ops;
      r.op_ns = ptprof::detail::saturating_add(r.op_ns, c.op_ns);
      for (const auto& [step, ns] : c.step_ns) r.step_ns[step] = std::max(r.step_ns[step], ns);
    }
  }

  void add(const trace::Trace& t) {
    std::vector<ProcessState*> of_process = register_processes(t);
    // Collectives of each process, across its threads: gloo's and NCCL's
    // work is recorded from enqueue to completion and need not nest in c10d's
    // op, so their time is the union of the intervals.
    std::vector<std::vector<std::pair<int64_t, int64_t>>> comm(t.processes.size());
    // Events by thread, in start order with parents ahead of their children.
    std::vector<std::vector<uint32_t>> by_thread(t.threads.size());
    for (uint32_t i = 0; i < t.events.size(); ++i)
      if (t.events[i].thread < t.threads.size()) by_thread[t.events[i].thread].push_back(i);
    // Each process's steps (start, end, number), to place its collective calls.
    std::vector<std::vector<std::tuple<int64_t, int64_t, uint64_t>>> steps(t.processes.size());
    for (const trace::Event& e : t.events)
      if (e.kind == trace::EventKind::Step && trace::is_step(e) && e.thread < t.threads.size() &&
          t.threads[e.thread].process < steps.size())
        steps[t.threads[e.thread].process].emplace_back(e.start_ns, e.end_ns, e.arg);
    for (auto& s : steps) std::sort(s.begin(), s.end());
    for (size_t th = 0; th < t.threads.size(); ++th) {
      const uint32_t pi = t.threads[th].process;
      if (pi >= of_process.size()) continue;
      ProcessState& s = *of_process[pi];
      std::vector<uint32_t>& ev = by_thread[th];
      std::sort(ev.begin(), ev.end(), [&](uint32_t a, uint32_t b) {
        const trace::Event &x = t.events[a], &y = t.events[b];
        return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.end_ns > y.end_ns;
      });
      Outermost ops, collectives;
      for (uint32_t i : ev) {
        const trace::Event& e = t.events[i];
        ++s.row.events;
        if (e.kind == trace::EventKind::Step) {
          if (!trace::is_step(e)) continue;  // before the first step, after the last
          s.row.step_ns[e.arg] = std::max(s.row.step_ns[e.arg], duration(e));
          continue;
        }
        if (e.kind != trace::EventKind::Op) continue;
        ++s.row.ops;
        const bool async = e.flags & trace::kAsync;  // spans threads: no place in a thread's nesting
        if (!async && ops.take(e.start_ns, e.end_ns))
          s.row.op_ns = ptprof::detail::saturating_add(s.row.op_ns, duration(e));
        const std::string_view name = e.name < t.strings.size() ? std::string_view(t.strings[e.name]) : "";
        if (!is_collective(name)) continue;
        CollectiveTotals& c = s.collectives[std::string(name)];
        ++c.calls;
        c.ns = ptprof::detail::saturating_add(c.ns, duration(e));
        if (async || collectives.take(e.start_ns, e.end_ns)) {
          ++s.row.collective_calls;
          if (const uint64_t step = step_at(steps[pi], e.start_ns); step != 0)
            (is_c10d_call(name) ? s.c10d_calls : s.work_calls)
                .push_back(
                    {step, ptprof::detail::saturating_add(e.start_ns, t.header.realtime_offset_ns), std::string(name)});
        }
        comm[pi].emplace_back(e.start_ns, e.start_ns + duration(e));
      }
    }
    for (size_t pi = 0; pi < comm.size(); ++pi) {
      auto& iv = comm[pi];
      std::sort(iv.begin(), iv.end());
      int64_t end = INT64_MIN;
      for (const auto& [b, e] : iv) {
        if (e <= end) continue;
        of_process[pi]->row.collective_ns =
            ptprof::detail::saturating_add(of_process[pi]->row.collective_ns, e - std::max(b, end));
        end = e;
      }
    }
  }

  RankSummary finish() {
    RankSummary out;
    std::map<int32_t, std::vector<const ProcessState*>> by_rank;
    for (auto& [key, s] : processes) {
      if (s.row.rank >= 0) by_rank[s.row.rank].push_back(&s);
      out.processes.push_back(s.row);
      out.processes.back().step_ns.clear();  // the ranks' steps are what the report shows
    }
    for (ProcessRow& r : out.processes) {
      const bool parent_profiled = std::any_of(out.processes.begin(), out.processes.end(), [&](const ProcessRow& o) {
        return o.host == r.host && o.pid == r.ppid && o.pid != r.pid;
      });
      r.role = process_role_text(r.agent_role, r.role_index, r.rank, parent_profiled);
    }
    std::stable_sort(out.processes.begin(), out.processes.end(), [](const ProcessRow& a, const ProcessRow& b) {
      return std::make_tuple(a.host, uint32_t(a.rank), a.pid) < std::make_tuple(b.host, uint32_t(b.rank), b.pid);
    });
    for (auto& [rank, members] : by_rank) {
      RankRow r;
      r.rank = rank;
      r.processes = uint32_t(members.size());
      std::map<std::string, CollectiveRow> collectives;
      for (const ProcessState* s : members) {
        r.ops += s->row.ops;
        r.op_ns = ptprof::detail::saturating_add(r.op_ns, s->row.op_ns);
        r.collective_calls += s->row.collective_calls;
        r.collective_ns = ptprof::detail::saturating_add(r.collective_ns, s->row.collective_ns);
        for (const auto& [name, c] : s->collectives) {
          CollectiveRow& row = collectives[name];
          row.name = name;
          row.calls += c.calls;
          row.total_ns = ptprof::detail::saturating_add(row.total_ns, c.ns);
        }
        // The main process: its parent is not one of the rank's (DataLoader
        // workers are the main process's children, with its RANK).
        const bool main = std::none_of(members.begin(), members.end(), [&](const ProcessState* o) {
          return o != s && o->row.host == s->row.host && o->row.pid == s->row.ppid;
        });
        if (!main) continue;
        if (r.pid == 0 || !s->row.step_ns.empty()) {
          r.pid = s->row.pid;
          r.host = s->row.host;
          r.world_size = s->row.world_size;
        }
        for (const auto& [step, ns] : s->row.step_ns) r.step_ns[step] = std::max(r.step_ns[step], ns);
      }
      for (auto& [name, c] : collectives) r.collectives.push_back(std::move(c));
      out.ranks.push_back(std::move(r));
    }
    std::map<uint64_t, std::vector<std::pair<int32_t, int64_t>>> by_step;
    for (const RankRow& r : out.ranks)
      for (const auto& [step, ns] : r.step_ns) by_step[step].emplace_back(r.rank, ns);
    for (const auto& [step, times] : by_step) {
      if (times.size() < 2) continue;
      StragglerRow row;
      row.step = step;
      row.ranks = uint32_t(times.size());
      // Ties go to the lowest rank.
      auto slowest = std::max_element(times.begin(), times.end(),
                                      [](const auto& a, const auto& b) { return a.second < b.second; });
      row.slowest_rank = slowest->first;
      row.slowest_ns = slowest->second;
      std::vector<int64_t> ns;
      ns.reserve(times.size());
      for (const auto& [rank, t] : times) ns.push_back(t);
      row.median_ns = median(std::move(ns));
      row.lag_ns = row.slowest_ns - row.median_ns;
      out.stragglers.push_back(row);
    }
    out.arrivals = match_arrivals(by_rank);
    return out;
  }

  // Per rank, per step, its collective calls in the order it made them;
  // then the index-th of each step matched across the ranks that have it.
  static std::vector<ArrivalRow> match_arrivals(const std::map<int32_t, std::vector<const ProcessState*>>& by_rank) {
    std::map<uint64_t, std::map<int32_t, std::vector<const Arrival*>>> by_step;
    for (const auto& [rank, members] : by_rank) {
      const bool has_c10d =
          std::any_of(members.begin(), members.end(), [](const ProcessState* s) { return !s->c10d_calls.empty(); });
      for (const ProcessState* s : members)
        for (const Arrival& a : has_c10d ? s->c10d_calls : s->work_calls) by_step[a.step][rank].push_back(&a);
    }
    std::vector<ArrivalRow> rows;
    for (auto& [step, ranks] : by_step) {
      if (ranks.size() < 2) continue;
      size_t calls = 0;
      for (auto& [rank, list] : ranks) {
        std::sort(list.begin(), list.end(), [](const Arrival* a, const Arrival* b) { return a->wall_ns < b->wall_ns; });
        calls = std::max(calls, list.size());
      }
      for (size_t i = 0; i < calls; ++i) {
        ArrivalRow row;
        row.step = step;
        row.index = uint32_t(i);
        int64_t first = INT64_MAX, last = INT64_MIN;
        for (const auto& [rank, list] : ranks) {
          if (i >= list.size()) continue;
          const int64_t at = list[i]->wall_ns;
          if (row.arrivals.empty())
            row.name = list[i]->name;
          else if (list[i]->name != row.name)
            row.names_agree = false;
          row.arrivals.emplace_back(rank, at);
          first = std::min(first, at);
          if (at > last) {
            last = at;
            row.last_rank = rank;
          }
        }
        if (row.arrivals.size() < 2) continue;
        for (auto& [rank, at] : row.arrivals) at -= first;
        row.spread_ns = last - first;
        rows.push_back(std::move(row));
      }
    }
    return rows;
  }
};

RankSummaryBuilder::RankSummaryBuilder() : impl_(std::make_unique<Impl>()) {}
RankSummaryBuilder::~RankSummaryBuilder() = default;
RankSummaryBuilder::RankSummaryBuilder(RankSummaryBuilder&&) noexcept = default;
RankSummaryBuilder& RankSummaryBuilder::operator=(RankSummaryBuilder&&) noexcept = default;

void RankSummaryBuilder::add(const trace::Trace& t) { impl_->add(t); }
void RankSummaryBuilder::add_counted(const trace::Trace& t, const std::vector<ProcessEventCounts>& counts) {
  impl_->add_counted(t, counts);
}
RankSummary RankSummaryBuilder::finish() && { return impl_->finish(); }

namespace {

std::string time_text(int64_t ns) { return format_time_us(double(ns) / 1000.0); }
std::string rank_text(int32_t rank) { return rank >= 0 ? std::to_string(rank) : "-"; }

// A command line as one table cell: control characters (a `python -c`
// script's newlines) become spaces.
std::string one_line(std::string_view s, size_t max_code_points) {
  std::string out(utf8_prefix(s, max_code_points));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return out;
}

// Columns right-aligned under their titles, as the operator table's.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> titles) : rows_{std::move(titles)} {}
  void add(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  std::string render() const {
    std::vector<size_t> widths(rows_[0].size(), 0);
    for (const auto& r : rows_)
      for (size_t c = 0; c < r.size() && c < widths.size(); ++c) widths[c] = std::max(widths[c], utf8_length(r[c]));
    std::string sep;
    for (size_t w : widths) sep.append(w, '-').append(2, ' ');
    sep += "\n";
    std::string out = sep;
    for (size_t i = 0; i < rows_.size(); ++i) {
      for (size_t c = 0; c < widths.size(); ++c) {
        append_right(out, c < rows_[i].size() ? rows_[i][c] : std::string(), widths[c]);
        out.append(2, ' ');
      }
      out += "\n";
      if (i == 0) out += sep;
    }
    return out + sep;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string processes_table(const RankSummary& s) {
  if (s.processes.size() < 2) return {};
  TextTable t({"Host", "PID", "PPID", "Role", "Rank", "Events", "Ops", "Op time", "Command"});
  for (const ProcessRow& p : s.processes)
    t.add({p.host, std::to_string(p.pid), std::to_string(p.ppid), p.role, rank_text(p.rank), std::to_string(p.events),
           std::to_string(p.ops), time_text(p.op_ns), one_line(p.cmdline, 60)});
  return "\nProcesses (ops: every op event; op time: top-level ops)\n" + t.render();
}

// The rows a text report shows of the collective arrivals; --json has all.
constexpr size_t kArrivalRowsShown = 40;

std::string arrivals_table(const std::vector<ArrivalRow>& rows) {
  if (rows.empty()) return {};
  TextTable t(
      {"Step", "#", "Collective", "Ranks", "Last to arrive", "Spread", "Arrivals after the first, latest first"});
  std::map<int32_t, uint64_t> last_count;
  for (const ArrivalRow& r : rows) ++last_count[r.last_rank];
  for (size_t i = 0; i < rows.size() && i < kArrivalRowsShown; ++i) {
    const ArrivalRow& r = rows[i];
    // Latest first: with many ranks the late ones are what a reader looks for.
    std::vector<std::pair<int32_t, int64_t>> latest = r.arrivals;
    std::stable_sort(latest.begin(), latest.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string when;
    for (const auto& [rank, after] : latest) {
      if (when.size() > 80) {
        when += " ...";
        break;
      }
      when += (when.empty() ? "r" : "  r") + std::to_string(rank) + " +" + time_text(after);
    }
    t.add({std::to_string(r.step), std::to_string(r.index + 1),
           r.names_agree ? one_line(r.name, 40) : one_line(r.name, 24) + " (names differ)",
           std::to_string(r.arrivals.size()), std::to_string(r.last_rank), time_text(r.spread_ns), when});
  }
  std::string out =
      "\nCollective arrivals (per step, the Nth collective call of each rank, matched by order; the last to arrive "
      "is what the others wait for)\n" +
      t.render();
  if (rows.size() > kArrivalRowsShown)
    out += std::to_string(rows.size() - kArrivalRowsShown) + " more rows (ptprof report --json: collective_arrivals)\n";
  std::string most;
  for (const auto& [rank, n] : last_count)
    most += (most.empty() ? "" : ", ") + std::string("rank ") + std::to_string(rank) + ": " + std::to_string(n);
  return out + "Last to arrive, of " + std::to_string(rows.size()) + " collectives: " + most + "\n";
}

std::string ranks_table(const RankSummary& s) {
  if (s.ranks.empty()) return {};
  TextTable t({"Rank", "Host", "PID", "Procs", "Steps", "Step avg", "Step max", "Ops", "Op time", "Collective time"});
  for (const RankRow& r : s.ranks) {
    const size_t n = r.step_ns.size();
    t.add({std::to_string(r.rank), r.host, std::to_string(r.pid), std::to_string(r.processes), std::to_string(n),
           n ? time_text(r.step_total_ns() / int64_t(n)) : "-", n ? time_text(r.step_max_ns()) : "-",
           std::to_string(r.ops), time_text(r.op_ns), time_text(r.collective_ns)});
  }
  std::string out =
      "\nRanks (steps of each rank's main process; ops and collectives of all its processes; collective time: while "
      "any collective op was in flight)\n" +
      t.render();
  TextTable c({"Rank", "Collective", "Calls", "Total time"});
  bool any = false;
  for (const RankRow& r : s.ranks)
    for (const CollectiveRow& row : r.collectives) {
      c.add({std::to_string(r.rank), row.name, std::to_string(row.calls), time_text(row.total_ns)});
      any = true;
    }
  if (any) out += "\nCollective ops per rank (nested calls counted in each)\n" + c.render();
  if (!s.stragglers.empty()) {
    TextTable st({"Step", "Ranks", "Slowest rank", "Its time", "Median", "Lag"});
    for (const StragglerRow& r : s.stragglers)
      st.add({std::to_string(r.step), std::to_string(r.ranks), std::to_string(r.slowest_rank), time_text(r.slowest_ns),
              time_text(r.median_ns), time_text(r.lag_ns)});
    out += "\nStragglers (per step: the rank with the longest step, its lag behind the median)\n" + st.render();
  }
  return out + arrivals_table(s.arrivals);
}

template <typename T, typename F>
std::string json_list(const std::vector<T>& items, F&& item, const char* indent, const char* close_indent) {
  if (items.empty()) return "[]";
  std::string out = "[\n";
  for (size_t i = 0; i < items.size(); ++i) out += indent + item(items[i]) + (i + 1 < items.size() ? ",\n" : "\n");
  return out + close_indent + "]";
}

}  // namespace

std::string render_ranks_table(const RankSummary& s) { return processes_table(s) + ranks_table(s); }

std::string render_ranks_json(const RankSummary& s) {
  std::string out =
      "  \"processes\": " +
      json_list(
          s.processes,
          [](const ProcessRow& p) {
            return "{\"host\": " + json_string(p.host) + ", \"pid\": " + std::to_string(p.pid) +
                   ", \"ppid\": " + std::to_string(p.ppid) + ", \"role\": " + json_string(p.role) +
                   ", \"rank\": " + std::to_string(p.rank) + ", \"local_rank\": " + std::to_string(p.local_rank) +
                   ", \"world_size\": " + std::to_string(p.world_size) + ", \"events\": " + std::to_string(p.events) +
                   ", \"ops\": " + std::to_string(p.ops) + ", \"op_time_us\": " + us(p.op_ns) +
                   ", \"collective_calls\": " + std::to_string(p.collective_calls) +
                   ", \"collective_time_us\": " + us(p.collective_ns) + ", \"cmdline\": " + json_string(p.cmdline) +
                   "}";
          },
          "    ", "  ") +
      ",\n";
  out += "  \"ranks\": " +
         json_list(
             s.ranks,
             [](const RankRow& r) {
               std::string steps;
               for (const auto& [step, ns] : r.step_ns)
                 steps += std::string(steps.empty() ? "" : ", ") + "{\"step\": " + std::to_string(step) +
                          ", \"wall_us\": " + us(ns) + "}";
               std::string coll;
               for (const CollectiveRow& c : r.collectives)
                 coll += std::string(coll.empty() ? "" : ", ") + "{\"name\": " + json_string(c.name) +
                         ", \"calls\": " + std::to_string(c.calls) + ", \"time_us\": " + us(c.total_ns) + "}";
               return "{\"rank\": " + std::to_string(r.rank) + ", \"world_size\": " + std::to_string(r.world_size) +
                      ", \"host\": " + json_string(r.host) + ", \"pid\": " + std::to_string(r.pid) +
                      ", \"processes\": " + std::to_string(r.processes) + ", \"ops\": " + std::to_string(r.ops) +
                      ", \"op_time_us\": " + us(r.op_ns) +
                      ", \"collective_calls\": " + std::to_string(r.collective_calls) +
                      ", \"collective_time_us\": " + us(r.collective_ns) + ", \"collectives\": [" + coll +
                      "], \"steps\": [" + steps + "]}";
             },
             "    ", "  ") +
         ",\n";
  out += "  \"stragglers\": " +
         json_list(
             s.stragglers,
             [](const StragglerRow& r) {
               return "{\"step\": " + std::to_string(r.step) + ", \"ranks\": " + std::to_string(r.ranks) +
                      ", \"slowest_rank\": " + std::to_string(r.slowest_rank) +
                      ", \"slowest_us\": " + us(r.slowest_ns) + ", \"median_us\": " + us(r.median_ns) +
                      ", \"lag_us\": " + us(r.lag_ns) + "}";
             },
             "    ", "  ") +
         ",\n";
  out += "  \"collective_arrivals\": " +
         json_list(
             s.arrivals,
             [](const ArrivalRow& r) {
               std::string when;
               for (const auto& [rank, after] : r.arrivals)
                 when += std::string(when.empty() ? "" : ", ") + "{\"rank\": " + std::to_string(rank) +
                         ", \"after_us\": " + us(after) + "}";
               return "{\"step\": " + std::to_string(r.step) + ", \"index\": " + std::to_string(r.index) +
                      ", \"name\": " + json_string(r.name) + ", \"ranks\": " + std::to_string(r.arrivals.size()) +
                      ", \"names_agree\": " + (r.names_agree ? "true" : "false") +
                      ", \"last_rank\": " + std::to_string(r.last_rank) + ", \"spread_us\": " + us(r.spread_ns) +
                      ", \"arrivals\": [" + when + "]}";
             },
             "    ", "  ") +
         ",\n";
  return out;
}

}  // namespace ptprof::report
