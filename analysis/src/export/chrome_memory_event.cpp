// "[memory]" instants in Kineto's shape, as torch 2.x's export_chrome_trace
// writes them: {"ph":"i","cat":"cpu_instant_event","s":"t","name":"[memory]",
// pid, tid, ts, "args":{"Total Reserved","Total Allocated","Bytes",
// "Device Id","Device Type","Addr","Ev Idx"}} (Device Id -1 for the CPU).
#include <charconv>

#include "export/chrome_event_format.hpp"

namespace ptprof::exporting::detail {

void ChromeEventFormatter::append_memory(std::string& out, const trace::Trace& t, const trace::Event& e, uint64_t id) {
  trace::MemoryInfo m;  // a reference the reader let through is valid; a hand-built one may not be
  if (e.arg >= 1 && e.arg <= t.memory.size()) m = t.memory[e.arg - 1];
  out += "{\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"s\":\"t\",\"name\":\"[memory]\",";
  out += pid_tid_json(t, e.thread < t.threads.size() ? e.thread : 0);
  out += ",\"ts\":";
  append_us(out, wall_ns(e.start_ns) - base_wall_ns_);
  out += ",\"args\":{\"Total Reserved\":";
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, m.total_reserved);
  out.append(buf, r.ptr);
  append_number_arg(out, "Total Allocated", m.total_allocated);
  append_number_arg(out, "Bytes", m.bytes);
  append_number_arg(out, "Device Id", int(m.device_index));
  append_number_arg(out, "Device Type", int(m.device_type));
  append_number_arg(out, "Addr", m.ptr);
  append_number_arg(out, "Ev Idx", id - 1);
  out += "}}";
}

}  // namespace ptprof::exporting::detail
