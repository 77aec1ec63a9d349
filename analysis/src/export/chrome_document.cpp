#include "export/chrome_document.hpp"

#include <cstdio>

#include "text/json_string.hpp"

namespace ptprof::exporting::detail {

namespace {

void append_metadata(std::string& out, std::string_view name, int32_t pid, int32_t tid, std::string_view arg,
                     std::string_view json_value) {
  // Elements after the first start with ",\n"; the list opens with "[\n".
  if (out.back() != '\n') out += ",\n";
  out += "{\"ph\":\"M\",\"name\":\"";
  out += name;
  out += "\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"ts\":0,\"args\":{\"";
  out += arg;
  out += "\":";
  out += json_value;
  out += "}}";
}

using text::json_string;

// 64-bit FNV-1a of `text` from `seed`: trace ids need no more than a stable
// spread of bits.
uint64_t fnv1a(std::string_view text, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

std::string trace_id(const InputSummary& in) {
  std::string key = in.host + "|" + std::to_string(in.base_wall_ns);
  for (const ProcessInfo& p : in.processes) {
    key += '|';
    key += std::to_string(p.pid);
    key += ' ';
    key += p.cmdline;
  }
  char id[33];
  std::snprintf(id, sizeof id, "%016llX%016llX", static_cast<unsigned long long>(fnv1a(key, 0xcbf29ce484222325ull)),
                static_cast<unsigned long long>(fnv1a(key, 0x84222325cbf29ce4ull)));
  return id;
}

}  // namespace

std::string chrome_preamble(const InputSummary& in, const PartLabel& part) {
  std::string out = "{\n\"schemaVersion\": 1,\n\"deviceProperties\": [";
  // Kineto's list, each GPU's entry as its agent wrote it.
  for (size_t i = 0; i < in.gpu_devices.size(); ++i) {
    out += i ? ",\n" : "\n";
    out += in.gpu_devices[i].properties;
  }
  out += in.gpu_devices.empty() ? "],\n" : "\n],\n";
  // Kineto's distributedInfo, on a line of its own and before anything else
  // that could match: HTA takes a file's rank from the first line matching
  // "rank":\s+(\d+), and reads a file without one as rank 0.
  if (const auto& d = in.distributed) {
    out += "\"distributedInfo\": {";
    if (!d->backend.empty()) out += "\"backend\": " + json_string(d->backend) + ", ";
    out += "\"rank\": " + std::to_string(d->rank);
    if (d->world_size > 0) out += ", \"world_size\": " + std::to_string(d->world_size);
    out += "},\n";
  }
  if (in.record_shapes) out += "\"record_shapes\": 1,\n";
  if (in.profile_memory) out += "\"profile_memory\": 1,\n";
  out += "\"displayTimeUnit\": \"ms\",\n";
  out += "\"baseTimeNanoseconds\": " + std::to_string(in.base_wall_ns) + ",\n";
  out += "\"host_name\": " + json_string(in.host) + ",\n";
  out += "\"trace_id\": \"" + trace_id(in) + "\",\n";
  out += "\"traceName\": " + json_string(part.path) + ",\n";
  out += "\"ptprof\": {\"part\": " + std::to_string(part.index + 1) + ", \"parts\": " + std::to_string(part.count) +
         ", \"dropped_events\": " + std::to_string(in.dropped) + "},\n";
  out += "\"traceEvents\": [\n";
  for (const ProcessInfo& p : in.processes) {
    append_metadata(out, "process_name", p.pid, 0, "name", json_string(p.name));
    append_metadata(out, "process_labels", p.pid, 0, "labels",
                    p.rank >= 0 ? json_string("CPU, rank " + std::to_string(p.rank)) : "\"CPU\"");
    // Ranks first, in rank order; then the other processes by pid.
    append_metadata(out, "process_sort_index", p.pid, 0, "sort_index", std::to_string(p.rank >= 0 ? p.rank : p.pid));
  }
  for (const ThreadInfo& t : in.threads) {
    append_metadata(out, "thread_name", t.pid, t.tid, "name", json_string(t.name));
    append_metadata(out, "thread_sort_index", t.pid, t.tid, "sort_index", std::to_string(t.tid));
  }
  return out;
}

Result<std::unique_ptr<ChromeDocument>> ChromeDocument::create(const std::string& path, const InputSummary& inputs,
                                                               const PartLabel& part) {
  auto doc = std::unique_ptr<ChromeDocument>(new ChromeDocument());
  PTPROF_ASSIGN_OR_RETURN(doc->out_, OutputFile::create(path));
  std::string preamble = chrome_preamble(inputs, part);
  doc->need_separator_ = preamble.back() != '\n';
  doc->out_->write(preamble);
  return doc;
}

void ChromeDocument::add_event(std::string_view event_json) {
  line_.assign(need_separator_ ? ",\n" : "");
  line_ += event_json;
  need_separator_ = true;
  out_->write(line_);
}

Status ChromeDocument::finish() {
  out_->write(kChromeEpilogue);
  return out_->finish();
}

}  // namespace ptprof::exporting::detail
