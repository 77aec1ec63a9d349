#include "ptprof/losses.hpp"

#include "ptprof/shm_abi.hpp"

namespace ptprof::trace {

std::vector<std::string> loss_lines(const Losses& l) {
  std::vector<std::string> lines;
  if (l.unnamed_events || l.names_refused)
    lines.push_back(std::to_string(l.unnamed_events) + " events are shown as \"" + std::string(kLostName) +
                    "\": the string arena was full (" + std::to_string(l.names_refused) +
                    " names refused; PTPROF_NAMES_MB raises the limit)");
  // Threads not recorded, by cause; the advice is the cause's, never the ring's.
  if (l.lost_threads || (l.lost_thread_events && !l.shm_short_threads))
    lines.push_back(std::to_string(l.lost_threads) + " threads beyond the thread table were not recorded (" +
                    std::to_string(l.lost_thread_events) + " events lost): more than " +
                    std::to_string(wire::kMaxThreads) + " threads of one process were alive at once");
  if (l.shm_short())
    lines.push_back(
        "/dev/shm was short: " + std::to_string(l.shm_short_threads) + " threads got no ring and were not recorded" +
        (l.lost_threads ? std::string() : " (" + std::to_string(l.lost_thread_events) + " events lost)") + ", " +
        std::to_string(l.shm_small_rings) + " threads got a smaller ring, " + std::to_string(l.shm_short_names) +
        " names were refused; give /dev/shm more room (docker run --shm-size) or lower --ring-kb");
  if (l.late_events)
    lines.push_back(std::to_string(l.late_events) +
                    " events arrived after their window's file was written and are not in it");
  if (l.malformed_bytes)
    lines.push_back(std::to_string(l.malformed_bytes) + " bytes of malformed records were skipped");
  return lines;
}

}  // namespace ptprof::trace
