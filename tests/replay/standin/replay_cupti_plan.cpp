#include "replay_cupti_plan.hpp"

#include <charconv>
#include <fstream>
#include <string_view>

namespace replay_cupti {

namespace {

constexpr std::string_view kMagic = "ptprof-replay-plan";

// The first n-1 TAB-separated fields and the rest of the line as the n-th
// (names come last and may hold anything but a TAB, a TAB included there is
// no concern of ours). False when the line has fewer than n fields.
bool split(std::string_view line, size_t n, std::vector<std::string_view>& out) {
  out.clear();
  while (out.size() + 1 < n) {
    const size_t tab = line.find('\t');
    if (tab == std::string_view::npos) return false;
    out.push_back(line.substr(0, tab));
    line.remove_prefix(tab + 1);
  }
  out.push_back(line);
  return true;
}

template <class T>
bool number(std::string_view s, T& v) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool triple(std::string_view s, int32_t (&v)[3]) {
  for (int i = 0; i < 3; ++i) {
    const size_t comma = i < 2 ? s.find(',') : s.size();
    if (comma == std::string_view::npos || !number(s.substr(0, comma), v[i])) return false;
    s.remove_prefix(i < 2 ? comma + 1 : s.size());
  }
  return true;
}

bool work_kind(std::string_view s, WorkKind& k) {
  if (s == "kernel")
    k = WorkKind::Kernel;
  else if (s == "memcpy")
    k = WorkKind::Memcpy;
  else if (s == "memset")
    k = WorkKind::Memset;
  else if (s == "sync")
    k = WorkKind::Sync;
  else
    return false;
  return true;
}

// `key=value;...` ("-": none). Unknown keys are skipped (newer plans may add
// some); a known key with a value that does not parse is an error.
bool attrs(std::string_view s, PlanWork& w, std::string& why) {
  if (s == "-" || s.empty()) return true;
  while (!s.empty()) {
    const size_t semi = s.find(';');
    const std::string_view kv = s.substr(0, semi);
    s.remove_prefix(semi == std::string_view::npos ? s.size() : semi + 1);
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view k = kv.substr(0, eq), v = kv.substr(eq + 1);
    bool ok = true;
    if (k == "grid")
      ok = triple(v, w.grid);
    else if (k == "block")
      ok = triple(v, w.block);
    else if (k == "regs")
      ok = number(v, w.registers);
    else if (k == "smem")
      ok = number(v, w.dynamic_smem);
    else if (k == "static_smem")
      ok = number(v, w.static_smem);
    else if (k == "bytes")
      ok = number(v, w.bytes);
    else if (k == "copy_kind")
      ok = number(v, w.copy_kind);
    else if (k == "src_kind")
      ok = number(v, w.src_kind);
    else if (k == "dst_kind")
      ok = number(v, w.dst_kind);
    else if (k == "value")
      ok = number(v, w.value);
    else if (k == "queued")
      ok = w.has_queued = number(v, w.queued);
    else if (k == "submitted")
      ok = w.has_submitted = number(v, w.submitted);
    else if (k == "sync_type")
      ok = number(v, w.sync_type);
    else if (k == "event")
      ok = w.has_event = number(v, w.event);
    else if (k == "graph_node")
      ok = number(v, w.graph_node);
    else if (k == "graph")
      ok = number(v, w.graph);
    if (!ok) {
      why = "bad attr " + std::string(kv);
      return false;
    }
  }
  return true;
}

}  // namespace

const char* Plan::keep(std::string s) {
  if (auto it = name_index_.find(s); it != name_index_.end()) return it->second;
  const char* p = names_.emplace_back(std::move(s)).c_str();
  name_index_.emplace(names_.back(), p);
  return p;
}

void Plan::clear() {
  calls_.clear();
  call_index_.clear();
  work_index_.clear();
  work_.clear();
  orphans_.clear();
  api_names_.clear();
  devices_ = duplicates_ = 0;
  // names_ stays: a name handed out once stays valid.
}

bool Plan::read(const std::string& path, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open";
    return false;
  }
  std::string line;
  std::vector<std::string_view> f;
  size_t number_of_line = 0;
  auto fail = [&](const std::string& why) {
    error = path + ":" + std::to_string(number_of_line) + ": " + why;
    clear();
    return false;
  };
  while (std::getline(in, line)) {
    ++number_of_line;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string_view l = line;
    if (number_of_line == 1) {
      if (!split(l, 2, f) || f[0] != kMagic) return fail("not a replay plan (no ptprof-replay-plan header)");
      if (f[1] != "1") return fail("plan version " + std::string(f[1]) + ", this stand-in reads version 1");
      continue;
    }
    const std::string_view type = l.substr(0, l.find('\t'));
    if (type == "device") {
      ++devices_;
    } else if (type == "call") {
      // call n start end runtime|driver cbid correlation name
      PlanCall c;
      int64_t cbid = 0;
      if (!split(l, 8, f) || !number(f[2], c.start) || !number(f[3], c.end) || !number(f[5], cbid) ||
          !number(f[6], c.correlation) || (f[4] != "runtime" && f[4] != "driver"))
        return fail("bad call line");
      c.driver = f[4] == "driver";
      c.cbid = cbid < 0 ? 0 : uint32_t(cbid);
      c.name = keep(std::string(f[7]));
      // CUPTI's name of the function: the runtime's carry the version
      // they appeared in ("cudaLaunchKernel_v7000"), the driver's do not.
      if (!api_names_.count({c.driver, c.cbid}))  // the first name of a cbid wins
        api_names_.emplace(std::make_pair(c.driver, c.cbid), keep(std::string(f[7]) + (c.driver ? "" : "_v7000")));
      if (c.correlation == 0) continue;  // cannot be asked for: ptprof_replay_call(0) is unknown
      if (!call_index_.emplace(c.correlation, calls_.size()).second) {
        ++duplicates_;  // the first call line of a correlation is the one replayed
        continue;
      }
      calls_.push_back(c);
    } else if (type == "work") {
      // work correlation kind start end device context stream attrs name
      PlanWork w;
      std::string why;
      if (!split(l, 10, f) || !number(f[1], w.correlation) || !work_kind(f[2], w.kind) || !number(f[3], w.start) ||
          !number(f[4], w.end) || !number(f[5], w.device) || !number(f[6], w.context) || !number(f[7], w.stream))
        return fail("bad work line");
      if (!attrs(f[8], w, why)) return fail(why);
      if (w.end < w.start) return fail("work ends before it starts");
      w.name = keep(std::string(f[9]));
      work_.push_back(w);
    }
    // thread, scope, trace and unknown lines: the driver's, or newer than us.
  }
  if (number_of_line == 0) return fail("empty file");
  for (size_t i = 0; i < work_.size(); ++i) {
    const uint32_t corr = work_[i].correlation;
    if (corr != 0 && call_index_.count(corr))
      work_index_[corr].push_back(i);
    else
      orphans_.push_back(i);
  }
  return true;
}

const PlanCall* Plan::call(uint32_t correlation) const {
  auto it = call_index_.find(correlation);
  return it == call_index_.end() ? nullptr : &calls_[it->second];
}

const std::vector<size_t>* Plan::work_of(uint32_t correlation) const {
  auto it = work_index_.find(correlation);
  return it == work_index_.end() ? nullptr : &it->second;
}

const char* Plan::api_name(bool driver, uint32_t cbid) const {
  auto it = api_names_.find({driver, cbid});
  return it == api_names_.end() ? nullptr : it->second;
}

}  // namespace replay_cupti
