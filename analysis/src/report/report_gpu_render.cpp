// GpuReport as text sections (in the manner of `nsys stats`) and as JSON.
#include <algorithm>

#include "ptprof/analysis/report_gpu.hpp"
#include "text/text_util.hpp"

namespace ptprof::report {

using text::append_right;
using text::csv_field;
using text::fixed;
using text::json_string;
using text::utf8_length;

namespace {

std::string num(double v, int decimals) { return fixed(v, decimals); }
std::string num(int64_t v) { return std::to_string(v); }
std::string num(uint64_t v) { return std::to_string(v); }

std::string percent(int64_t part, int64_t total) {
  return total > 0 ? fixed(100.0 * double(part) / double(total), 1) : "-";
}

std::string dims(const uint32_t d[3]) {
  return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]);
}

// Columns right-aligned to their widest cell, the last (a name) left-aligned.
std::string grid(const std::vector<std::string>& titles, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> w(titles.size());
  for (size_t c = 0; c < titles.size(); ++c) {
    w[c] = utf8_length(titles[c]);
    for (const auto& r : rows) w[c] = std::max(w[c], utf8_length(r[c]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c + 1 == cells.size()) {
        s += cells[c];
      } else {
        append_right(s, cells[c], w[c]);
        s += "  ";
      }
    }
    return s + "\n";
  };
  std::string out = line(titles);
  std::vector<std::string> dashes;
  for (size_t c = 0; c < titles.size(); ++c) dashes.push_back(std::string(w[c], '-'));
  out += line(dashes);
  for (const auto& r : rows) out += line(r);
  return out;
}

std::vector<std::string> time_cells(const Distribution& d) {
  return {num(d.total), num(d.count), num(d.avg, 1), num(d.med, 1), num(d.min), num(d.max), num(d.stddev, 1)};
}

// "aten::mm (4), aten::relu (2)": the ops and their kernels, all replays.
std::string graph_ops_text(const GraphRow& g) {
  std::string out;
  for (const GraphOpShare& o : g.ops) out += (out.empty() ? "" : ", ") + o.op + " (" + num(o.kernels) + ")";
  return out;
}

std::string dist_json(const Distribution& d) {
  return "{\"count\": " + num(d.count) + ", \"total\": " + num(d.total) + ", \"avg\": " + num(d.avg, 3) +
         ", \"med\": " + num(d.med, 3) + ", \"min\": " + num(d.min) + ", \"max\": " + num(d.max) +
         ", \"stddev\": " + num(d.stddev, 3) + "}";
}

std::string dims_json(const uint32_t d[3]) {
  return "[" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) + "]";
}

template <class T, class F>
std::string array(const std::vector<T>& items, F&& item) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ",\n      " : "\n      ") + item(items[i]);
  return out + (items.empty() ? "]" : "\n    ]");
}

// One section: its title, column titles and rows of cells. The text and the
// CSV print the same sections; only a percentage of a zero total differs
// ("-" in the text, NaN in the CSV, as the op table's CSV writes it).
struct Section {
  std::string title;
  std::vector<std::string> titles;
  std::vector<std::vector<std::string>> rows;
};

std::vector<Section> sections(const GpuReport& g, const std::string& no_percent) {
  auto pct = [&](int64_t part, int64_t total) { return total > 0 ? percent(part, total) : no_percent; };
  std::vector<Section> out;
  const std::vector<std::string> time_titles = {"Total Time (ns)", "Instances", "Avg (ns)",   "Med (ns)",
                                                "Min (ns)",        "Max (ns)",  "StdDev (ns)"};
  if (!g.kernels.empty()) {
    Section s{"GPU kernel summary", {"Time (%)"}, {}};
    s.titles.insert(s.titles.end(), time_titles.begin(), time_titles.end());
    s.titles.insert(s.titles.end(), {"GridXYZ", "BlockXYZ", "Name"});
    for (const KernelRow& k : g.kernels) {
      std::vector<std::string> r = {pct(k.time_ns.total, g.kernel_total_ns)};
      auto t = time_cells(k.time_ns);
      r.insert(r.end(), t.begin(), t.end());
      r.insert(r.end(), {dims(k.grid), dims(k.block), k.name});
      s.rows.push_back(std::move(r));
    }
    out.push_back(std::move(s));
  }
  if (!g.memory_ops.empty()) {
    int64_t total = 0;
    for (const auto& m : g.memory_ops) total += m.time_ns.total;
    Section by_time{"GPU memory operations by time", {"Time (%)"}, {}};
    by_time.titles.insert(by_time.titles.end(), time_titles.begin(), time_titles.end());
    by_time.titles[2] = "Count";
    by_time.titles.push_back("Operation");
    Section by_size{"GPU memory operations by size",
                    {"Total (B)", "Count", "Avg (B)", "Med (B)", "Min (B)", "Max (B)", "StdDev (B)", "Operation"},
                    {}};
    for (const MemoryOpRow& m : g.memory_ops) {
      std::vector<std::string> r = {pct(m.time_ns.total, total)};
      auto t = time_cells(m.time_ns);
      r.insert(r.end(), t.begin(), t.end());
      r.push_back(m.name);
      by_time.rows.push_back(std::move(r));
      const Distribution& b = m.bytes;
      by_size.rows.push_back(
          {num(b.total), num(b.count), num(b.avg, 1), num(b.med, 1), num(b.min), num(b.max), num(b.stddev, 1), m.name});
    }
    out.push_back(std::move(by_time));
    out.push_back(std::move(by_size));
  }
  if (!g.graph_nodes.empty()) {
    Section s{"CUDA graph kernels by node", {"PID", "Graph", "Graph node"}, {}};
    s.titles.insert(s.titles.end(), time_titles.begin(), time_titles.end());
    s.titles.push_back("Kernel");
    for (const GraphNodeRow& n : g.graph_nodes) {
      std::vector<std::string> r = {num(int64_t(n.pid)), num(uint64_t(n.graph_id)), num(n.node_id)};
      auto t = time_cells(n.time_ns);
      r.insert(r.end(), t.begin(), t.end());
      r.push_back(n.name);
      s.rows.push_back(std::move(r));
    }
    out.push_back(std::move(s));
  }
  if (!g.graphs.empty()) {
    Section s{"CUDA graph replays",
              {"PID", "Graph", "Replays", "Kernels", "Kernels/replay", "Time/replay avg (ns)", "Med (ns)", "Min (ns)",
               "Max (ns)", "Kernel time (ns)", "Ops"},
              {}};
    for (const GraphRow& r : g.graphs)
      s.rows.push_back({num(int64_t(r.pid)), num(uint64_t(r.graph_id)), num(r.replays), num(r.kernels),
                        num(r.kernels_per_replay, 1), num(r.replay_ns.avg, 1), num(r.replay_ns.med, 1),
                        num(r.replay_ns.min), num(r.replay_ns.max), num(r.kernel_ns), graph_ops_text(r)});
    out.push_back(std::move(s));
  }
  if (!g.devices.empty()) {
    Section s{"GPU utilisation (busy: union of kernels, copies and sets)",
              {"PID", "Device", "Busy (ns)", "Window (ns)", "Busy (%)"},
              {}};
    for (const DeviceUtilRow& d : g.devices)
      s.rows.push_back(
          {num(int64_t(d.pid)), num(int64_t(d.device)), num(d.busy_ns), num(d.span_ns), pct(d.busy_ns, d.span_ns)});
    out.push_back(std::move(s));
  }
  // Per stream only where a device has several: with one it repeats the device's row.
  const bool several_streams = g.streams.size() > g.devices.size();
  if (several_streams) {
    Section s{"GPU utilisation per stream", {"PID", "Device", "Stream", "Busy (ns)", "Window (ns)", "Busy (%)"}, {}};
    for (const StreamUtilRow& st : g.streams)
      s.rows.push_back({num(int64_t(st.pid)), num(int64_t(st.device)), num(st.stream), num(st.busy_ns), num(st.span_ns),
                        pct(st.busy_ns, st.span_ns)});
    out.push_back(std::move(s));
  }
  if (!g.steps.empty()) {
    Section s{"GPU utilisation per step", {"Step", "PID", "Device", "Busy (ns)", "Step (ns)", "Busy (%)"}, {}};
    for (const StepUtilRow& st : g.steps)
      s.rows.push_back({num(st.step), num(int64_t(st.pid)), num(int64_t(st.device)), num(st.busy_ns), num(st.step_ns),
                        pct(st.busy_ns, st.step_ns)});
    out.push_back(std::move(s));
  }
  if (g.launch.count) {
    const LaunchLatency& l = g.launch;
    out.push_back({"Kernel launch latency (kernel start - launch call start)",
                   {"Kernels", "Avg (ns)", "Min (ns)", "P50 (ns)", "P90 (ns)", "P99 (ns)", "Max (ns)"},
                   {{num(l.count), num(l.avg_ns, 1), num(l.min_ns), num(l.p50_ns), num(l.p90_ns), num(l.p99_ns),
                     num(l.max_ns)}}});
  }
  if (!g.overheads.empty()) {
    Section s{"CUPTI overhead (not part of any kernel or op time)", time_titles, {}};
    s.titles[1] = "Count";
    s.titles.push_back("Overhead");
    for (const OverheadRow& o : g.overheads) {
      auto t = time_cells(o.time_ns);
      t.push_back(o.name);
      s.rows.push_back(std::move(t));
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::string csv_line(const std::vector<std::string>& cells) {
  std::string s;
  for (size_t c = 0; c < cells.size(); ++c) s += (c ? "," : "") + csv_field(cells[c]);
  return s + "\n";
}

}  // namespace

std::string render_gpu_sections(const GpuReport& g) {
  std::string out;
  for (const std::string& n : g.notes) out += "\n" + n + "\n";
  if (g.kernels.empty() && g.memory_ops.empty() && g.overheads.empty()) return out;
  for (const Section& s : sections(g, "-")) out += "\n" + s.title + "\n" + grid(s.titles, s.rows);
  out += "\nGPU work joined to ops by correlation: " + num(g.matched);
  if (g.unmatched_kernels || g.unmatched_memory_ops || g.launch.without_launch) {
    out += "; unmatched: " + num(g.unmatched_kernels) + " kernels (" + num(g.unmatched_kernel_ns) + " ns), " +
           num(g.unmatched_memory_ops) + " memory operations";
    if (g.launch.without_launch) out += "; kernels without their launch call: " + num(g.launch.without_launch);
  }
  if (g.graph_work)
    out += "; CUDA graph work attributed to its capture: " + num(g.graph_work) +
           " (captured outside the window: " + num(g.graph_work_outside) + ")";
  return out + "\n";
}

std::string render_gpu_csv(const GpuReport& g) {
  std::string out;
  if (!g.notes.empty()) {
    out += "\nCUDA notes\nNote\n";
    for (const std::string& n : g.notes) out += csv_field(n) + "\n";
  }
  if (g.kernels.empty() && g.memory_ops.empty() && g.overheads.empty()) return out;
  for (const Section& s : sections(g, "NaN")) {
    out += "\n" + csv_field(s.title) + "\n" + csv_line(s.titles);
    for (const auto& r : s.rows) out += csv_line(r);
  }
  out += "\nGPU work joined to ops by correlation\n" +
         csv_line({"Joined", "Unmatched kernels", "Unmatched kernel time (ns)", "Unmatched memory operations",
                   "Kernels without their launch call"}) +
         csv_line({num(g.matched), num(g.unmatched_kernels), num(g.unmatched_kernel_ns), num(g.unmatched_memory_ops),
                   num(g.launch.without_launch)});
  if (g.graph_work)
    out += "\nCUDA graph work attributed to its capture\n" + csv_line({"Attributed", "Captured outside the window"}) +
           csv_line({num(g.graph_work), num(g.graph_work_outside)});
  return out;
}

std::string render_gpu_json(const GpuReport& g) {
  std::string out = "{\n";
  out += "    \"notes\": " + array(g.notes, [](const std::string& n) { return json_string(n); }) + ",\n";
  out += "    \"kernel_total_ns\": " + num(g.kernel_total_ns) + ",\n";
  out += "    \"matched\": " + num(g.matched) + ",\n";
  out += "    \"unmatched_kernels\": " + num(g.unmatched_kernels) + ",\n";
  out += "    \"unmatched_kernel_ns\": " + num(g.unmatched_kernel_ns) + ",\n";
  out += "    \"unmatched_memory_ops\": " + num(g.unmatched_memory_ops) + ",\n";
  out += "    \"graph_work\": " + num(g.graph_work) + ",\n";
  out += "    \"graph_work_outside\": " + num(g.graph_work_outside) + ",\n";
  out += "    \"kernels\": " +
         array(g.kernels,
               [](const KernelRow& k) {
                 return "{\"name\": " + json_string(k.name) + ", \"grid\": " + dims_json(k.grid) +
                        ", \"block\": " + dims_json(k.block) + ", \"time_ns\": " + dist_json(k.time_ns) + "}";
               }) +
         ",\n";
  out += "    \"memory_ops\": " +
         array(g.memory_ops,
               [](const MemoryOpRow& m) {
                 return "{\"name\": " + json_string(m.name) + ", \"time_ns\": " + dist_json(m.time_ns) +
                        ", \"bytes\": " + dist_json(m.bytes) + "}";
               }) +
         ",\n";
  out += "    \"overheads\": " +
         array(g.overheads,
               [](const OverheadRow& o) {
                 return "{\"name\": " + json_string(o.name) + ", \"time_ns\": " + dist_json(o.time_ns) + "}";
               }) +
         ",\n";
  out += "    \"graph_nodes\": " +
         array(g.graph_nodes,
               [](const GraphNodeRow& n) {
                 return "{\"pid\": " + num(int64_t(n.pid)) + ", \"graph\": " + num(uint64_t(n.graph_id)) +
                        ", \"node\": " + num(n.node_id) + ", \"name\": " + json_string(n.name) +
                        ", \"time_ns\": " + dist_json(n.time_ns) + "}";
               }) +
         ",\n";
  out += "    \"graphs\": " +
         array(g.graphs,
               [](const GraphRow& r) {
                 return "{\"pid\": " + num(int64_t(r.pid)) + ", \"graph\": " + num(uint64_t(r.graph_id)) +
                        ", \"replays\": " + num(r.replays) + ", \"kernels\": " + num(r.kernels) +
                        ", \"kernels_per_replay\": " + num(r.kernels_per_replay, 3) +
                        ", \"replay_ns\": " + dist_json(r.replay_ns) + ", \"kernel_ns\": " + num(r.kernel_ns) +
                        ", \"ops\": " +
                        array(r.ops,
                              [](const GraphOpShare& o) {
                                return "{\"op\": " + json_string(o.op) + ", \"kernels\": " + num(o.kernels) + "}";
                              }) +
                        "}";
               }) +
         ",\n";
  out += "    \"devices\": " +
         array(g.devices,
               [](const DeviceUtilRow& d) {
                 return "{\"pid\": " + num(int64_t(d.pid)) + ", \"device\": " + num(int64_t(d.device)) +
                        ", \"busy_ns\": " + num(d.busy_ns) + ", \"span_ns\": " + num(d.span_ns) + "}";
               }) +
         ",\n";
  out += "    \"streams\": " +
         array(g.streams,
               [](const StreamUtilRow& s) {
                 return "{\"pid\": " + num(int64_t(s.pid)) + ", \"device\": " + num(int64_t(s.device)) +
                        ", \"stream\": " + num(s.stream) + ", \"busy_ns\": " + num(s.busy_ns) +
                        ", \"span_ns\": " + num(s.span_ns) + "}";
               }) +
         ",\n";
  out += "    \"steps\": " +
         array(g.steps,
               [](const StepUtilRow& s) {
                 return "{\"step\": " + num(s.step) + ", \"pid\": " + num(int64_t(s.pid)) +
                        ", \"device\": " + num(int64_t(s.device)) + ", \"busy_ns\": " + num(s.busy_ns) +
                        ", \"step_ns\": " + num(s.step_ns) + "}";
               }) +
         ",\n";
  const LaunchLatency& l = g.launch;
  out += "    \"launch_latency_ns\": {\"count\": " + num(l.count) + ", \"without_launch\": " + num(l.without_launch) +
         ", \"avg\": " + num(l.avg_ns, 3) + ", \"min\": " + num(l.min_ns) + ", \"p50\": " + num(l.p50_ns) +
         ", \"p90\": " + num(l.p90_ns) + ", \"p99\": " + num(l.p99_ns) + ", \"max\": " + num(l.max_ns) + "}\n";
  return out + "  }";
}

}  // namespace ptprof::report
