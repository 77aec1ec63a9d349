// The ranks' sections of the report as text and JSON (render_ranks_table,
// render_ranks_json); report_ranks.cpp computes them.
#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ptprof/analysis/report_format.hpp"
#include "ptprof/analysis/report_ranks.hpp"
#include "text/text_util.hpp"

namespace ptprof::report {

using namespace detail;
using text::append_right;
using text::json_string;
using text::us;
using text::utf8_length;
using text::utf8_prefix;

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
  TextTable t({"Step", "#", "Collective", "Group:seq", "Ranks", "Last to arrive", "Spread",
               "Arrivals after the first, latest first"});
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
           r.seq >= 0 ? one_line(r.process_group, 16) + ":" + std::to_string(r.seq) : "-",
           std::to_string(r.arrivals.size()), std::to_string(r.last_rank), time_text(r.spread_ns), when});
  }
  std::string out =
      "\nCollective arrivals (per step, each rank's call of one collective: matched by process group and sequence "
      "number where torch numbers them (Group:seq), else the Nth call of each rank; the last to arrive is what the "
      "others wait for)\n" +
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
                      ", \"process_group\": " + (r.seq >= 0 ? json_string(r.process_group) : "null") +
                      ", \"seq\": " + (r.seq >= 0 ? std::to_string(r.seq) : "null") + ", \"arrivals\": [" + when + "]}";
             },
             "    ", "  ") +
         ",\n";
  return out;
}

}  // namespace ptprof::report
