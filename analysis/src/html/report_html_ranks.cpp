// The page's processes and ranks: what the text report's sections say
// (report_ranks.hpp), as sortable tables, each process with its role.
#include <map>

#include "html/report_html_cells.hpp"
#include "html/report_html_plots.hpp"
#include "html/report_html_tables.hpp"
#include "ptprof/analysis/report_format.hpp"
#include "text/text_util.hpp"

namespace ptprof::html::detail {

using report::ArrivalRow;
using report::CollectiveRow;
using report::ProcessRow;
using report::RankRow;
using report::RankSummary;
using report::StragglerRow;

namespace {

std::string table_head(const std::string& id, std::initializer_list<const char*> titles) {
  std::string out = "<table class=\"ops\" id=\"" + id + "\"><thead><tr>";
  for (const char* t : titles) out += "<th>" + std::string(t) + "</th>";
  return out + "</tr></thead><tbody>";
}

// What a process is in the run: a rank's main process, a process another one
// of the inputs started (a DataLoader worker, a spawned child), or the program.
std::string role(const ProcessRow& p, const RankSummary& s) {
  for (const RankRow& r : s.ranks)
    if (r.pid == p.pid) return "rank " + std::to_string(r.rank) + " (main)";
  for (const ProcessRow& parent : s.processes)
    if (parent.pid == p.ppid && parent.host == p.host)
      return "child of pid " + std::to_string(parent.pid) +
             (p.rank >= 0 ? " (rank " + std::to_string(p.rank) + ")" : std::string());
  return p.rank >= 0 ? "rank " + std::to_string(p.rank) : "main";
}

}  // namespace

std::string ranks_section(const RankSummary& s) {
  if (s.processes.size() < 2 && s.ranks.empty()) return {};
  std::string out = "\n<h2 id=\"processes-title\">Processes and ranks</h2>\n";
  out += table_head("processes", {"Host", "PID", "PPID", "Role", "Rank", "Events", "Ops", "Op time", "Collective calls",
                                  "Collective time", "Command"});
  for (const ProcessRow& p : s.processes)
    out += "<tr>" + text_cell(p.host) + int_cell(p.pid) + int_cell(p.ppid) + text_cell(role(p, s)) +
           text_cell(p.rank >= 0 ? std::to_string(p.rank) : "-") + int_cell(int64_t(p.events)) +
           int_cell(int64_t(p.ops)) + time_cell(p.op_ns) + int_cell(int64_t(p.collective_calls)) +
           time_cell(p.collective_ns) + text_cell(p.cmdline) + "</tr>";
  out += "</tbody></table>\n";
  if (s.ranks.empty()) return out;
  out +=
      "<h3>Ranks</h3><p>Steps of each rank's main process; ops and collectives of all its processes; collective "
      "time: while any collective op was in flight.</p>\n";
  out += table_head(
      "ranks", {"Rank", "Host", "PID", "Procs", "Steps", "Step avg", "Step max", "Ops", "Op time", "Collective time"});
  for (const RankRow& r : s.ranks) {
    const int64_t n = int64_t(r.step_ns.size());
    out += "<tr>" + int_cell(r.rank) + text_cell(r.host) + int_cell(r.pid) + int_cell(r.processes) + int_cell(n) +
           (n ? time_cell(r.step_total_ns() / n) : text_cell("-")) + (n ? time_cell(r.step_max_ns()) : text_cell("-")) +
           int_cell(int64_t(r.ops)) + time_cell(r.op_ns) + time_cell(r.collective_ns) + "</tr>";
  }
  out += "</tbody></table>\n";
  std::string collectives;
  for (const RankRow& r : s.ranks)
    for (const CollectiveRow& c : r.collectives)
      collectives +=
          "<tr>" + int_cell(r.rank) + text_cell(c.name) + int_cell(int64_t(c.calls)) + time_cell(c.total_ns) + "</tr>";
  if (!collectives.empty())
    out += "<h3>Collective ops per rank</h3><p>Nested calls counted in each.</p>\n" +
           table_head("collectives", {"Rank", "Collective", "Calls", "Total time"}) + collectives +
           "</tbody></table>\n";
  if (!s.stragglers.empty()) {
    out += "<h3>Stragglers</h3><p>Per step: the rank with the longest step, its lag behind the median.</p>\n" +
           table_head("stragglers", {"Step", "Ranks", "Slowest rank", "Its time", "Median", "Lag"});
    for (const StragglerRow& r : s.stragglers)
      out += "<tr>" + int_cell(int64_t(r.step)) + int_cell(r.ranks) + int_cell(r.slowest_rank) +
             time_cell(r.slowest_ns) + time_cell(r.median_ns) + time_cell(r.lag_ns) + "</tr>";
    out += "</tbody></table>\n";
  }
  if (!s.arrivals.empty()) {
    // A page stays light on a long job with many ranks; the JSON has every row.
    constexpr size_t kRowsShown = 2000;
    out +=
        "<h3>Collective arrivals</h3><p>Per step: the Nth collective call of each rank, matched by order; the last "
        "rank to arrive is the one the others waited for.</p>\n" +
        table_head("arrivals", {"Step", "#", "Collective", "Ranks", "Last to arrive", "Spread"});
    for (size_t i = 0; i < s.arrivals.size() && i < kRowsShown; ++i) {
      const ArrivalRow& r = s.arrivals[i];
      out += "<tr>" + int_cell(int64_t(r.step)) + int_cell(int64_t(r.index) + 1) +
             text_cell(r.names_agree ? r.name : r.name + " (names differ)") + int_cell(int64_t(r.arrivals.size())) +
             int_cell(r.last_rank) + time_cell(r.spread_ns) + "</tr>";
    }
    out += "</tbody></table>\n";
    if (s.arrivals.size() > kRowsShown)
      out += "<p>" + std::to_string(s.arrivals.size() - kRowsShown) +
             " more rows: ptprof report --json, collective_arrivals.</p>\n";
  }
  return out;
}

}  // namespace ptprof::html::detail
