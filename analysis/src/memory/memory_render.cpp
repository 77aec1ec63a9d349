// `ptprof memory`'s text and the --timeline CSV.
#include <cinttypes>
#include <cstdio>

#include "ptprof/analysis/memory.hpp"
#include "report/text_util.hpp"

namespace ptprof::memory {

using report::detail::csv_field;

std::string format_bytes(int64_t bytes, bool exact) {
  if (exact) return std::to_string(bytes);
  const char* const units[] = {"KiB", "MiB", "GiB", "TiB"};
  const double a = bytes < 0 ? -double(bytes) : double(bytes);
  if (a < 1024.0) return std::to_string(bytes) + " B";
  double v = double(bytes) / 1024.0;
  size_t u = 0;
  while (u + 1 < std::size(units) && (v < 0 ? -v : v) >= 1024.0) {
    v /= 1024.0;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}

namespace {

void line(std::string& out, const char* fmt, auto... args) {
  char buf[1024];
  std::snprintf(buf, sizeof buf, fmt, args...);
  out += buf;
}

// The concrete inputs, where recorded, say more than torch's shapes text
// (which prints [] for a size argument).
std::string op_text(const std::string& op, const std::string& shapes, const std::string& inputs = {}) {
  if (!inputs.empty()) return op + " " + inputs;
  return shapes.empty() ? op : op + " " + shapes;
}

// The innermost entries of a peak's Python stack, under its line.
void stack_lines(std::string& out, const std::vector<std::string>& stack) {
  constexpr size_t kShown = 5;
  for (size_t i = 0; i < stack.size() && i < kShown; ++i) line(out, "      %s\n", stack[i].c_str());
  if (stack.size() > kShown) line(out, "      ... %zu outer frames\n", stack.size() - kShown);
}

}  // namespace

std::string render_text(const Summary& s, const RenderOptions& o) {
  std::string out;
  auto b = [&](int64_t v) { return format_bytes(v, o.exact_bytes); };
  const size_t limit = o.row_limit ? o.row_limit : SIZE_MAX;
  if (s.events == 0) {
    out += "No memory events: record with `ptprof run --profile-memory` (PTPROF_PROFILE_MEMORY=1).\n";
    return out;
  }
  line(out, "%" PRIu64 " memory events in %zu file(s)\n\n", s.events, s.files.size());

  out += "Peak memory (torch's totals, and CUDA segments as reserved memory, per process and device)\n";
  for (const Peak& p : s.peaks) {
    if (p.allocated_seen) {
      line(out, "  pid %d %-8s allocated %s at %s", p.pid, device_name(p.device_type, p.device_index).c_str(),
           b(p.allocated).c_str(), p.allocated_op.c_str());
      if (!p.allocated_inner.empty() && p.allocated_inner != p.allocated_op)
        line(out, " (in %s)", p.allocated_inner.c_str());
      out += "\n";
      stack_lines(out, p.allocated_stack);
    }
    if (p.reserved > 0) {
      line(out, "  pid %d %-8s reserved  %s at %s\n", p.pid, device_name(p.device_type, p.device_index).c_str(),
           b(p.reserved).c_str(), p.reserved_op.c_str());
      stack_lines(out, p.reserved_stack);
    }
  }

  out += "\nLive at the end of the window (leak candidates: allocated in the window, not freed in it), largest first\n";
  size_t n = 0;
  if (s.live.empty())
    out += "  none\n";
  else
    line(out, "  %14s %8s %14s  %-8s %s\n", "bytes", "count", "each", "device",
         "op [concrete inputs, else input shapes]");
  for (const LiveGroup& g : s.live) {
    if (n++ == limit) {
      line(out, "  ... %zu more\n", s.live.size() - limit);
      break;
    }
    line(out, "  %14s %8" PRIu64 " %14s  %-8s %s\n", b(g.bytes).c_str(), g.count,
         g.block_bytes ? b(g.block_bytes).c_str() : "mixed", device_name(g.device_type, g.device_index).c_str(),
         op_text(g.op, g.shapes, g.inputs).c_str());
  }

  out += "\nAllocations per op (the outermost op at each allocation), most bytes first\n";
  if (s.ops.empty())
    out += "  none\n";
  else
    line(out, "  %12s %14s %12s %14s  %s\n", "allocs", "bytes", "frees", "freed", "op");
  n = 0;
  for (const OpMemory& m : s.ops) {
    if (n++ == limit) {
      line(out, "  ... %zu more\n", s.ops.size() - limit);
      break;
    }
    line(out, "  %12" PRIu64 " %14s %12" PRIu64 " %14s  %s\n", m.allocs, b(m.alloc_bytes).c_str(), m.frees,
         b(m.freed_bytes).c_str(), m.op.c_str());
  }
  if (!s.segment_ops.empty()) {
    out +=
        "\nCUDA segments per op (device memory from cudaMalloc, cuMemAlloc, cuMemCreate: reserved), most bytes first\n";
    line(out, "  %12s %14s %12s %14s  %s\n", "segments", "bytes", "released", "released", "op");
    n = 0;
    for (const OpMemory& m : s.segment_ops) {
      if (n++ == limit) {
        line(out, "  ... %zu more\n", s.segment_ops.size() - limit);
        break;
      }
      line(out, "  %12" PRIu64 " %14s %12" PRIu64 " %14s  %s\n", m.allocs, b(m.alloc_bytes).c_str(), m.frees,
           b(m.freed_bytes).c_str(), m.op.c_str());
    }
  }
  if (s.earlier_frees)
    line(out, "\n%" PRIu64 " free(s), %s, of blocks allocated in an earlier window\n", s.earlier_frees,
         b(s.earlier_freed_bytes).c_str());
  if (s.unmatched_frees)
    line(out, "\n%" PRIu64 " free(s), %s, of blocks allocated before the window (outside any recorded window)\n",
         s.unmatched_frees, b(s.unmatched_freed_bytes).c_str());
  return out;
}

std::string render_timeline_csv(const Summary& s) {
  std::string out = "time_ns,pid,device,allocated_bytes,reserved_bytes\n";
  for (const TimelinePoint& p : s.timeline) {
    out += std::to_string(p.ns) + "," + std::to_string(p.pid) + "," +
           csv_field(device_name(p.device_type, p.device_index)) + "," + std::to_string(p.allocated) + "," +
           std::to_string(p.reserved) + "\n";
  }
  return out;
}

}  // namespace ptprof::memory
