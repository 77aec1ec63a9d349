#include "ptprof/losses.hpp"

namespace ptprof::trace {

std::vector<std::string> loss_lines(const Losses& l) {
  std::vector<std::string> lines;
  if (l.unnamed_events || l.names_refused)
    lines.push_back(std::to_string(l.unnamed_events) +
                    " events were recorded without a name: the string arena was full (" +
                    std::to_string(l.names_refused) + " names refused)");
  if (l.lost_threads || l.lost_thread_events)
    lines.push_back(std::to_string(l.lost_threads) + " threads beyond the thread table were not recorded (" +
                    std::to_string(l.lost_thread_events) + " events lost)");
  if (l.late_events)
    lines.push_back(std::to_string(l.late_events) +
                    " events arrived after their window's file was written and are not in it");
  if (l.malformed_bytes)
    lines.push_back(std::to_string(l.malformed_bytes) + " bytes of malformed records were skipped");
  return lines;
}

}  // namespace ptprof::trace
