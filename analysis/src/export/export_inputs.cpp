#include "export/export_inputs.hpp"

#include <algorithm>
#include <limits>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include "export/device_properties.hpp"
#include "ptprof/analysis/trace_file.hpp"
#include "ptprof/process_role.hpp"

namespace ptprof::exporting::detail {

namespace {

std::string program_name(const std::string& cmdline) {
  std::string first = cmdline.substr(0, cmdline.find(' '));
  size_t slash = first.rfind('/');
  return slash == std::string::npos ? first : first.substr(slash + 1);
}

// The process group backend whose work a name is (torch records gloo's and
// NCCL's as "gloo:all_reduce", "nccl:all_reduce", ...); "" for other names.
std::string_view backend_of(std::string_view name) {
  for (std::string_view b : {"gloo", "nccl", "mpi", "ucc", "xccl"})
    if (name.size() > b.size() && name.substr(0, b.size()) == b && name[b.size()] == ':') return b;
  return {};
}

}  // namespace

Result<InputSummary> summarize_inputs(const std::vector<std::string>& files, std::vector<std::string>* warnings) {
  InputSummary s;
  std::set<int32_t> pids;
  std::set<std::pair<int32_t, int32_t>> tids;
  int64_t earliest = std::numeric_limits<int64_t>::max();
  std::set<int32_t> ranks;
  DistributedInfo dist;
  std::vector<std::tuple<int32_t, uint32_t, int32_t>> roles;  // of s.processes: ppid, role, role index
  for (const std::string& f : files) {
    PTPROF_ASSIGN_OR_RETURN(const trace::Trace t, format::read_trace_summary(f, warnings));
    if (s.host.empty()) s.host = t.header.host;
    earliest = std::min(earliest, t.header.window_start_ns + t.header.realtime_offset_ns);
    bool ranked = false;
    for (const auto& p : t.processes) {
      if (p.rank >= 0) {
        ranked = true;
        ranks.insert(p.rank);
        dist.rank = p.rank;
        if (p.world_size > 0) dist.world_size = p.world_size;
      }
      if (!pids.insert(p.pid).second) continue;
      s.processes.push_back({p.pid, program_name(p.cmdline), p.cmdline, p.rank});
      roles.push_back({p.ppid, p.role, p.role_index});
    }
    for (const auto& th : t.threads) {
      int32_t pid = th.process < t.processes.size() ? t.processes[th.process].pid : 0;
      s.dropped += th.dropped;
      if (!tids.insert({pid, th.tid}).second) continue;
      s.threads.push_back({pid, th.tid, th.name.empty() ? "thread " + std::to_string(th.tid) : th.name});
    }
    // The first file that describes a device names it (a file describes
    // the devices its window's processes used); the text is checked and
    // written again, as every name the export writes.
    for (const trace::GpuDevice& d : t.gpu_devices) {
      auto at = std::lower_bound(s.gpu_devices.begin(), s.gpu_devices.end(), d.id,
                                 [](const trace::GpuDevice& g, int32_t id) { return g.id < id; });
      if (at != s.gpu_devices.end() && at->id == d.id) continue;
      if (std::optional<DeviceProperties> p = read_device_properties(d.properties))
        s.gpu_devices.insert(at, trace::GpuDevice{d.id, std::move(p->json)});
    }
    if (ranked && dist.backend.empty())
      for (const std::string& name : t.strings)
        if (std::string_view b = backend_of(name); !b.empty()) {
          dist.backend = b;
          break;
        }
  }
  // Every view of a multi-rank export names each process's rank; a worker
  // or child is named by its role (process_role.hpp), the main process by
  // its program alone.
  for (size_t i = 0; i < s.processes.size(); ++i) {
    const auto& [ppid, role, index] = roles[i];
    const std::string text = process_role_text(role, index, s.processes[i].rank, pids.count(ppid) != 0);
    if (text != "main") s.processes[i].name += " [" + text + "]";
  }
  s.ranks = ranks.size();
  if (ranks.size() == 1) s.distributed = dist;
  if (files.empty() || earliest < 0) earliest = 0;
  s.base_wall_ns = earliest - earliest % 1'000'000'000;
  return s;
}

}  // namespace ptprof::exporting::detail
