#include "ptprof/analysis/report_ranks.hpp"

#include <algorithm>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "model/outermost.hpp"
#include "ptprof/analysis/report_format.hpp"
#include "ptprof/process_role.hpp"
#include "ptprof/saturating.hpp"
#include "text/text_util.hpp"

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

// A collective call's start, in the step that holds it, and what torch
// numbered it (its own record_param_comms facts or those of one inside it).
struct Arrival {
  uint64_t step = 0;
  int64_t wall_ns = 0;
  std::string name;
  std::string process_group;
  int64_t seq = -1;  // -1: torch gave no number
};

struct ProcessState {
  ProcessRow row;
  std::unordered_map<std::string, CollectiveTotals> collectives;
  // Outermost collective calls: c10d's ops, and the process groups' work.
  std::vector<Arrival> c10d_calls, work_calls;
};

bool is_c10d_call(std::string_view n) { return n.substr(0, 6) == "c10d::"; }

// The step (its number) whose span holds `ns` in a process's steps of one
// trace, sorted by start; none when none does (0 is a step: --step NAME
// numbers from 0).
std::optional<uint64_t> step_at(const std::vector<std::tuple<int64_t, int64_t, uint64_t>>& steps, int64_t ns) {
  auto it =
      std::upper_bound(steps.begin(), steps.end(), ns, [](int64_t v, const auto& s) { return v < std::get<0>(s); });
  if (it == steps.begin()) return std::nullopt;
  --it;
  if (ns < std::get<1>(*it)) return std::get<2>(*it);
  return std::nullopt;
}

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
    // Sequence-numbered collective ops, by thread and start.
    std::map<std::pair<uint32_t, int64_t>, const trace::CollectiveInfo*> numbered;
    // Per string id: is it a collective's name (asked of every op, found once).
    std::vector<uint8_t> collective_name(t.strings.size());
    for (size_t i = 0; i < t.strings.size(); ++i) collective_name[i] = is_collective(t.strings[i]);
    for (const trace::CollectiveInfo& c : t.collectives)
      if (c.seq >= 0) numbered[{c.thread, c.start_ns}] = &c;
    for (size_t th = 0; th < t.threads.size(); ++th) {
      const uint32_t pi = t.threads[th].process;
      if (pi >= of_process.size()) continue;
      ProcessState& s = *of_process[pi];
      std::vector<uint32_t>& ev = by_thread[th];
      std::sort(ev.begin(), ev.end(), [&](uint32_t a, uint32_t b) {
        const trace::Event &x = t.events[a], &y = t.events[b];
        return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.end_ns > y.end_ns;
      });
      model::Outermost ops, collectives;
      // The last call taken on this thread, while it is open: its numbered
      // facts may come from an op inside it.
      std::vector<Arrival>* open_list = nullptr;
      size_t open_index = 0;
      int64_t open_end = INT64_MIN;
      for (uint32_t i : ev) {
        const trace::Event& e = t.events[i];
        ++s.row.events;
        if (e.kind == trace::EventKind::Step) {
          if (!trace::is_step(e)) continue;  // before the first step, after the last
          s.row.step_ns[e.arg] = std::max(s.row.step_ns[e.arg], trace::duration_ns(e));
          continue;
        }
        if (e.kind != trace::EventKind::Op) continue;
        ++s.row.ops;
        const bool async = e.flags & trace::kAsync;  // spans threads: no place in a thread's nesting
        if (!async && ops.take(e.start_ns, e.end_ns))
          s.row.op_ns = ptprof::detail::saturating_add(s.row.op_ns, trace::duration_ns(e));
        if (e.name >= t.strings.size() || !collective_name[e.name]) continue;
        const std::string_view name = t.strings[e.name];
        CollectiveTotals& c = s.collectives[std::string(name)];
        ++c.calls;
        c.ns = ptprof::detail::saturating_add(c.ns, trace::duration_ns(e));
        if (async || collectives.take(e.start_ns, e.end_ns)) {
          ++s.row.collective_calls;
          open_list = nullptr;
          if (const std::optional<uint64_t> step = step_at(steps[pi], e.start_ns)) {
            open_list = is_c10d_call(name) ? &s.c10d_calls : &s.work_calls;
            open_list->push_back({*step,
                                  ptprof::detail::saturating_add(e.start_ns, t.header.realtime_offset_ns),
                                  std::string(name),
                                  {},
                                  -1});
            open_index = open_list->size() - 1;
            open_end = e.end_ns;
          }
        }
        if (!numbered.empty() && open_list && e.start_ns < open_end) {
          auto it = numbered.find({uint32_t(th), e.start_ns});
          Arrival& call = (*open_list)[open_index];
          if (it != numbered.end() && call.seq < 0) {
            const trace::CollectiveInfo& c = *it->second;
            call.seq = c.seq;
            call.process_group = c.process_group < t.strings.size() ? t.strings[c.process_group] : "";
          }
        }
        comm[pi].emplace_back(e.start_ns, e.start_ns + trace::duration_ns(e));
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

  void merge(Impl&& later) {
    for (auto& [key, from] : later.processes) {
      auto [at, added] = processes.try_emplace(key);
      if (added) {
        at->second = std::move(from);
        continue;
      }
      ProcessState& s = at->second;
      ProcessRow& r = s.row;
      const ProcessRow& f = from.row;
      // What each trace says of the process: the later one's, as add() keeps.
      r.host = f.host;
      r.pid = f.pid;
      r.ppid = f.ppid;
      r.rank = f.rank;
      r.local_rank = f.local_rank;
      r.world_size = f.world_size;
      r.cmdline = f.cmdline;
      if (f.agent_role != 0) {
        r.agent_role = f.agent_role;
        r.role_index = f.role_index;
      }
      r.events += f.events;
      r.ops += f.ops;
      r.op_ns = ptprof::detail::saturating_add(r.op_ns, f.op_ns);
      r.collective_calls += f.collective_calls;
      r.collective_ns = ptprof::detail::saturating_add(r.collective_ns, f.collective_ns);
      for (const auto& [step, ns] : f.step_ns) r.step_ns[step] = std::max(r.step_ns[step], ns);
      for (const auto& [name, c] : from.collectives) {
        CollectiveTotals& into = s.collectives[name];
        into.calls += c.calls;
        into.ns = ptprof::detail::saturating_add(into.ns, c.ns);
      }
      s.c10d_calls.insert(s.c10d_calls.end(), from.c10d_calls.begin(), from.c10d_calls.end());
      s.work_calls.insert(s.work_calls.end(), from.work_calls.begin(), from.work_calls.end());
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
      if (all_numbered(ranks)) {
        match_numbered(step, ranks, rows);
        continue;
      }
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
        finish_row(row, first, last, rows);
      }
    }
    return rows;
  }

  static bool all_numbered(const std::map<int32_t, std::vector<const Arrival*>>& ranks) {
    for (const auto& [rank, list] : ranks)
      for (const Arrival* a : list)
        if (a->seq < 0) return false;
    return true;
  }

  // A step whose every call torch numbered: one row per (process group,
  // sequence number), in that order, whatever order each rank made them in.
  static void match_numbered(uint64_t step, const std::map<int32_t, std::vector<const Arrival*>>& ranks,
                             std::vector<ArrivalRow>& rows) {
    std::map<std::pair<std::string, int64_t>, std::vector<std::pair<int32_t, const Arrival*>>> calls;
    for (const auto& [rank, list] : ranks)
      for (const Arrival* a : list) calls[{a->process_group, a->seq}].emplace_back(rank, a);
    uint32_t index = 0;
    for (auto& [key, of_ranks] : calls) {
      std::sort(of_ranks.begin(), of_ranks.end(), [](const auto& x, const auto& y) {
        return std::tie(x.first, x.second->wall_ns) < std::tie(y.first, y.second->wall_ns);
      });
      ArrivalRow row;
      row.step = step;
      row.index = index++;
      row.process_group = key.first;
      row.seq = key.second;
      int64_t first = INT64_MAX, last = INT64_MIN;
      for (const auto& [rank, a] : of_ranks) {  // by rank; a rank's first call of the key
        if (!row.arrivals.empty() && row.arrivals.back().first == rank) continue;
        if (row.arrivals.empty())
          row.name = a->name;
        else if (a->name != row.name)
          row.names_agree = false;
        row.arrivals.emplace_back(rank, a->wall_ns);
        first = std::min(first, a->wall_ns);
        if (a->wall_ns > last) {
          last = a->wall_ns;
          row.last_rank = rank;
        }
      }
      finish_row(row, first, last, rows);
    }
  }

  static void finish_row(ArrivalRow& row, int64_t first, int64_t last, std::vector<ArrivalRow>& rows) {
    if (row.arrivals.size() < 2) return;
    for (auto& [rank, at] : row.arrivals) at -= first;
    row.spread_ns = last - first;
    rows.push_back(std::move(row));
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
void RankSummaryBuilder::merge(RankSummaryBuilder&& later) { impl_->merge(std::move(*later.impl_)); }
RankSummary RankSummaryBuilder::finish() && { return impl_->finish(); }

}  // namespace ptprof::report
