// `ptprof memory`'s text and the --timeline CSV.
#include <cinttypes>
#include <cstdio>

#include "ptprof/analysis/memory.hpp"
#include "text/text_util.hpp"

namespace ptprof::memory {

using text::csv_field;

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

// The CUDA allocations that failed for want of memory, and the memory then.
void out_of_memory_lines(std::string& out, const Summary& s, const auto& b) {
  if (s.out_of_memory.empty()) return;
  line(out, "Out of memory: %zu CUDA allocation(s) failed\n", s.out_of_memory.size());
  for (const OutOfMemory& o : s.out_of_memory) {
    line(out, "  pid %d %s of %s failed (out of memory) in %s", o.pid, o.api.c_str(), b(int64_t(o.bytes)).c_str(),
         o.op.empty() ? "[outside any op]" : o.op.c_str());
    if (!o.inner.empty() && o.inner != o.op) line(out, " (in %s)", o.inner.c_str());
    out += "\n";
    stack_lines(out, o.stack);
    if (o.state.empty()) out += "    memory then: no memory events before it (record with --profile-memory)\n";
    for (const TimelinePoint& p : o.state)
      line(out, "    memory then: %-8s allocated %s, reserved %s\n", device_name(p.device_type, p.device_index).c_str(),
           b(p.allocated).c_str(), b(p.reserved).c_str());
  }
  out += "\n";
}

// Growth step over step (leaks) and the live memory at each step's end.
void growth_lines(std::string& out, const Summary& s, const auto& b, size_t limit) {
  if (s.steps == 0) {
    out += "\nNo steps recorded: growth step over step needs steps (a step rule, `ptprof run --help`)\n";
    return;
  }
  out +=
      "\nGrowth step over step (leaks: blocks allocated in a step and still live at the end of every later step,\n"
      "through the last step), per op that allocated them, largest first\n";
  if (s.growth.empty())
    out += "  none\n";
  else
    line(out, "  %14s %14s %8s %8s %10s  %-8s %s\n", "live at end", "per step", "steps", "blocks", "last step",
         "device", "op [concrete inputs, else input shapes]");
  size_t n = 0;
  for (const Growth& g : s.growth) {
    if (n++ == limit) {
      line(out, "  ... %zu more\n", s.growth.size() - limit);
      break;
    }
    line(out, "  %14s %14s %8" PRIu64 " %8" PRIu64 " %10" PRIu64 "  %-8s %s\n", b(g.bytes).c_str(),
         b(g.bytes / int64_t(g.steps)).c_str(), g.steps, g.count, g.last_step,
         device_name(g.device_type, g.device_index).c_str(), op_text(g.op, g.shapes, g.inputs).c_str());
    stack_lines(out, g.stack);
  }

  out += "\nLive at the end of each step (blocks allocated in the window, not yet freed), per process and device\n";
  if (s.step_live.empty()) {
    out += "  none\n";
    return;
  }
  line(out, "  %8s %-8s %8s %14s %8s %14s\n", "pid", "device", "step", "live", "blocks", "change in step");
  // The last steps are where a leak shows: keep those when rows are limited.
  const size_t skip = s.step_live.size() > limit ? s.step_live.size() - limit : 0;
  if (skip) line(out, "  ... %zu earlier\n", skip);
  for (size_t i = skip; i < s.step_live.size(); ++i) {
    const StepLive& l = s.step_live[i];
    const std::string change = (l.change > 0 ? "+" : "") + b(l.change);
    line(out, "  %8d %-8s %8" PRIu64 " %14s %8" PRIu64 " %14s\n", l.pid,
         device_name(l.device_type, l.device_index).c_str(), l.step, b(l.live).c_str(), l.blocks, change.c_str());
  }
}

// Memory by category: one row per step end (the last `limit`) and the peak.
template <class Bytes>
void category_lines(std::string& out, const Summary& s, Bytes&& b, size_t limit) {
  out += "\nMemory by category (torch's memory timeline rules), per process and device\n";
  if (s.categories.empty()) {
    line(out, "  %s\n", s.categories_unavailable.empty() ? "none" : s.categories_unavailable.c_str());
    return;
  }
  line(out, "  %8s %-8s %-10s", "pid", "device", "at");
  for (size_t c = 0; c < kCategories; ++c) line(out, " %15s", std::string(category_name(Category(c))).c_str());
  line(out, " %15s\n", "total");
  size_t steps = 0;
  for (const CategoryRow& r : s.categories) steps += r.peak ? 0 : 1;
  size_t skip = steps > limit ? steps - limit : 0;
  if (skip) line(out, "  ... %zu earlier step ends\n", skip);
  for (const CategoryRow& r : s.categories) {
    if (!r.peak && skip) {
      --skip;
      continue;
    }
    std::string at = "peak";
    if (!r.peak) at = "step " + std::to_string(r.step);
    line(out, "  %8d %-8s %-10s", r.pid, device_name(r.device_type, r.device_index).c_str(), at.c_str());
    int64_t total = 0;
    for (int64_t v : r.bytes) {
      line(out, " %15s", b(v).c_str());
      total += v;
    }
    line(out, " %15s\n", b(total).c_str());
  }
}

}  // namespace

std::string render_text(const Summary& s, const RenderOptions& o) {
  std::string out;
  auto b = [&](int64_t v) { return format_bytes(v, o.exact_bytes); };
  const size_t limit = o.row_limit ? o.row_limit : SIZE_MAX;
  out_of_memory_lines(out, s, b);
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

  growth_lines(out, s, b, limit);
  category_lines(out, s, b, limit);

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

std::string render_categories_json(const Summary& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.category_timelines.size(); ++i) {
    const CategoryTimeline& tl = s.category_timelines[i];
    out += i ? ",\n" : "\n";
    out += "{\"pid\": ";
    out += std::to_string(tl.pid);
    out += ", \"device\": \"";
    out += device_name(tl.device_type, tl.device_index);
    out += "\", \"timeline\": [[";
    for (size_t k = 0; k < tl.times_us.size(); ++k) {
      if (k) out += ", ";
      out += std::to_string(tl.times_us[k]);
    }
    out += "], [";
    for (size_t k = 0; k < tl.bytes.size(); ++k) {
      out += k ? ", [0" : "[0";  // torch's first column is always 0
      for (int64_t v : tl.bytes[k]) {
        out += ", ";
        out += std::to_string(v);
      }
      out += "]";
    }
    out += "]], \"step_ends_us\": [";
    bool first = true;
    for (const CategoryRow& r : s.categories) {
      if (r.peak || r.pid != tl.pid || r.device_type != tl.device_type || r.device_index != tl.device_index) continue;
      if (!first) out += ", ";
      first = false;
      out += "[";
      out += std::to_string(r.step);
      out += ", ";
      out += std::to_string(r.ns / 1000);
      out += "]";
    }
    out += "]}";
  }
  out += s.category_timelines.empty() ? "]\n" : "\n]\n";
  return out;
}

}  // namespace ptprof::memory
