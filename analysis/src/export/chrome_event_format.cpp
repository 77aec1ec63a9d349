#include "export/chrome_event_format.hpp"

#include <charconv>

#include "ptprof/record.hpp"
#include "stacks/stack_attribution.hpp"
#include "text/json_string.hpp"

namespace ptprof::exporting::detail {

namespace {

constexpr uint8_t kUserScope = 7;  // wire::OpScope::UserScope (record_function)

template <typename Int>
void append_int(std::string& out, Int v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// A call folded with CUPTI's record of it, whose times lie outside the
// hook's, is shown at CUPTI's times, as torch.profiler's trace shows it
// (trace::CudaInfo::cupti_start_ns): the launch delays HTA reads are then
// CUPTI's.
std::pair<int64_t, int64_t> shown_times(const trace::Trace& t, const trace::Event& e) {
  if (e.kind == trace::EventKind::CudaApi)
    if (const trace::CudaInfo* c = cuda_info(t, e); c && c->cupti_start_ns) return {c->cupti_start_ns, c->cupti_end_ns};
  return {e.start_ns, e.end_ns};
}

}  // namespace

std::string_view chrome_category(const trace::Event& e, const trace::CudaInfo* cuda) {
  using trace::EventKind;
  switch (e.kind) {
    case EventKind::Op:
      return e.scope != kUserScope ? "cpu_op" : "user_annotation";
    // torch.profiler's categories for what CUDA brings.
    case EventKind::CudaApi:
    case EventKind::CuptiApi:
      return cuda && cuda->family == uint8_t(wire::CudaApiFamily::Driver) ? "cuda_driver" : "cuda_runtime";
    case EventKind::Kernel:
      return "kernel";
    case EventKind::Memcpy:
      return "gpu_memcpy";
    case EventKind::Memset:
      return "gpu_memset";
    case EventKind::GpuSync:
      return "cuda_sync";
    case EventKind::GpuOverhead:
      return "overhead";
    default:
      return "user_annotation";
  }
}

std::string input_dims_json(std::string_view text, bool* truncated) {
  *truncated = false;
  std::string out;
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == ' ') continue;
    if (c == '[') {
      ++depth;
      out += c;
    } else if (c == ']') {
      if (--depth < 0) return "";
      if (!out.empty() && out.back() == ',') out.pop_back();
      out += c;
      if (depth == 0 && text.find_first_not_of(' ', i + 1) != std::string_view::npos) return "";
    } else if (c == ',' || (c >= '0' && c <= '9')) {
      if (depth == 0) return "";
      out += c;
    } else if (text.substr(i, 3) == "...") {
      *truncated = true;  // the encoder ran out of room: the inputs listed are complete
      i += 2;
    } else {
      return "";
    }
  }
  return depth == 0 && !out.empty() ? out : "";
}

void append_us(std::string& out, int64_t ns) {
  if (ns < 0) {
    out += '-';
    ns = -ns;
  }
  append_int(out, ns / 1000);
  int frac = int(ns % 1000);
  out += '.';
  out += char('0' + frac / 100);
  out += char('0' + frac / 10 % 10);
  out += char('0' + frac % 10);
}

void ChromeEventFormatter::begin_file(int64_t realtime_offset_ns) {
  realtime_offset_ns_ = realtime_offset_ns;
  names_.clear();
  dims_.clear();
  dims_truncated_.clear();
  pid_tids_.clear();
  stacks_.clear();
  collectives_.clear();
  collectives_seen_ = 0;
}

// Kineto's names (torch/csrc/profiler/util.h, kCommsName ...), which HTA's
// communication analysis reads.
void ChromeEventFormatter::append_collective(std::string& out, const trace::Trace& t, const trace::Event& e) {
  if (collectives_seen_ != t.collectives.size()) {
    collectives_.clear();
    for (const trace::CollectiveInfo& c : t.collectives) collectives_.emplace(std::make_pair(c.thread, c.start_ns), &c);
    collectives_seen_ = t.collectives.size();
  }
  auto it = collectives_.find({e.thread, e.start_ns});
  if (it == collectives_.end()) return;
  const trace::CollectiveInfo& c = *it->second;
  auto text = [&](const char* key, uint32_t id) {
    if (id == 0 || id >= t.strings.size()) return;
    out += key;
    text::append_json_string(out, t.strings[id]);
  };
  auto number = [&](const char* key, int64_t v) {
    if (v < 0) return;
    out += key;
    append_int(out, v);
  };
  text(",\"Collective name\":", c.name);
  text(",\"dtype\":", c.dtype);
  number(",\"In msg nelems\":", c.in_elements);
  number(",\"Out msg nelems\":", c.out_elements);
  number(",\"Group size\":", c.group_size);
  text(",\"Process Group Name\":", c.process_group);
  text(",\"Process Group Description\":", c.process_group_desc);
  number(",\"Rank\":", c.rank);
  number(",\"Seq\":", c.seq);
}

const std::string& ChromeEventFormatter::stack_json(const trace::Trace& t, uint32_t stack) {
  if (stacks_.size() <= t.stacks.size()) stacks_.resize(t.stacks.size() + 1);
  std::string& s = stacks_[stack];
  if (s.empty()) {
    std::string joined;
    for (const std::string& entry : stacks::stack_entries(t, stack)) joined += (joined.empty() ? "" : ";") + entry;
    if (joined.empty()) return s;
    text::append_json_string(s, joined);
  }
  return s;
}

const std::string& ChromeEventFormatter::name_json(const trace::Trace& t, uint32_t id) {
  if (names_.size() < t.strings.size()) names_.resize(t.strings.size());
  std::string& s = names_[id];
  if (s.empty()) text::append_json_string(s, t.strings[id]);
  return s;
}

const std::string& ChromeEventFormatter::dims_json(const trace::Trace& t, uint32_t id) {
  if (dims_.size() < t.strings.size()) {
    dims_.resize(t.strings.size());
    dims_truncated_.resize(t.strings.size(), 2);  // 2: not computed yet
  }
  if (dims_truncated_[id] == 2) {
    bool truncated = false;
    dims_[id] = input_dims_json(t.strings[id], &truncated);
    dims_truncated_[id] = truncated;
  }
  return dims_[id];
}

const std::string& ChromeEventFormatter::pid_tid_json(const trace::Trace& t, uint32_t thread) {
  if (pid_tids_.size() < t.threads.size()) pid_tids_.resize(t.threads.size());
  std::string& s = pid_tids_[thread];
  if (s.empty()) {
    const trace::Thread& th = t.threads[thread];
    s = "\"pid\":";
    append_int(s, th.process < t.processes.size() ? t.processes[th.process].pid : 0);
    s += ",\"tid\":";
    append_int(s, th.tid);
  }
  return s;
}

void ChromeEventFormatter::append(std::string& out, const trace::Trace& t, const trace::Event& e, uint64_t id) {
  if (e.kind == trace::EventKind::Memory) return append_memory(out, t, e, id);
  const bool instant = e.kind == trace::EventKind::Mark;
  out += instant ? "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"" : "{\"ph\":\"X\",\"cat\":\"";
  out += chrome_category(e, cuda_info(t, e));
  out += "\",\"name\":";
  if (e.kind == trace::EventKind::Step && (e.name == 0 || e.name >= t.strings.size())) {
    text::append_json_string(out, "ProfilerStep#" + std::to_string(e.arg));
  } else {
    out += name_json(t, e.name < t.strings.size() ? e.name : 0);
  }
  out += ',';
  out += pid_tid_json(t, e.thread < t.threads.size() ? e.thread : 0);
  const auto [start_ns, end_ns] = shown_times(t, e);
  out += ",\"ts\":";
  append_us(out, wall_ns(start_ns) - base_wall_ns_);
  if (!instant) {
    out += ",\"dur\":";
    append_us(out, end_ns > start_ns ? end_ns - start_ns : 0);
  }
  out += ",\"args\":{\"External id\":";
  const std::optional<uint64_t> launching_op = links_ ? links_->launching_op(t, e) : std::nullopt;
  append_int(out, launching_op.value_or(id));
  out += ",\"Ev Idx\":";
  append_int(out, id - 1);
  append_cuda_args(out, t, e);
  if (e.seq_nr >= 0) {
    out += ",\"Sequence number\":";
    append_int(out, e.seq_nr);
    out += ",\"Fwd thread id\":";
    append_int(out, e.fwd_thread_id);
  }
  // Kineto's id of the op in an execution trace (ExecutionTraceObserver's
  // rf_id), 0 when none is recorded, as here: torch writes it on every
  // operator and user scope.
  if (e.kind == trace::EventKind::Op) out += ",\"Record function id\":0";
  if (e.kind == trace::EventKind::Op && !t.collectives.empty()) [[unlikely]]
    append_collective(out, t, e);
  if (e.shapes != 0 && e.shapes < t.strings.size()) {
    const std::string& dims = dims_json(t, e.shapes);
    if (!dims.empty()) {
      out += ",\"Input Dims\":";
      out += dims;
      if (dims_truncated_[e.shapes]) out += ",\"Input Dims truncated\":1";
    }
  }
  if (e.stack != 0 && e.stack <= t.stacks.size()) {
    const std::string& stack = stack_json(t, e.stack);
    if (!stack.empty()) {
      out += ",\"Call stack\":";
      out += stack;
    }
  }
  if (e.flags & trace::kTruncated) out += ",\"Truncated\":1";  // its end was never seen
  if (e.flags & trace::kAsync) out += ",\"Async\":1";
  out += "}}";
  append_launch_flow(out, t, e, id);
}

void ChromeEventFormatter::append_flow(std::string& out, const trace::Trace& t, const trace::Event& e, bool start,
                                       uint64_t flow_id, std::string_view category) {
  out += start ? "{\"ph\":\"s\",\"id\":" : "{\"ph\":\"f\",\"bp\":\"e\",\"id\":";
  append_int(out, flow_id);
  out += ',';
  out += pid_tid_json(t, e.thread < t.threads.size() ? e.thread : 0);
  out += ",\"ts\":";
  append_us(out, wall_ns(shown_times(t, e).first) - base_wall_ns_);
  out += ",\"cat\":\"";
  out += category;
  out += "\",\"name\":\"";
  out += category;
  out += "\"}";
}

}  // namespace ptprof::exporting::detail
