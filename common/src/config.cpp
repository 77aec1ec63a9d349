#include "ptprof/config.hpp"

#include "ptprof/bridge_cache.hpp"

#include <charconv>
#include <string_view>

#include "ptprof/shm_abi.hpp"

namespace ptprof {
namespace {

bool parse_bool(const char* var, const char* v, bool* out, std::vector<std::string>* errors) {
  std::string_view s(v);
  if (s == "1" || s == "true" || s == "True" || s == "yes" || s == "on") {
    *out = true;
  } else if (s.empty() || s == "0" || s == "false" || s == "False" || s == "no" || s == "off") {
    *out = false;
  } else {
    errors->push_back(std::string(var) + "='" + std::string(s) +
                      "' is not a boolean; accepted: 1, true, True, yes, on or 0, false, False, no, off, empty");
    return false;
  }
  return true;
}

// The string arena's limit in MiB: reserved in /dev/shm only as names
// arrive, so a large limit costs address space, not memory.
void parse_names_mb(const char* v, uint64_t* out, std::vector<std::string>* errors) {
  constexpr uint64_t kMin = wire::kMinStringArenaBytes >> 20, kMax = wire::kMaxStringArenaBytes >> 20;
  std::string_view s(v);
  uint64_t mb = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), mb);
  if (ec != std::errc() || end != s.data() + s.size() || mb < kMin || mb > kMax)
    errors->push_back(std::string(env::kNamesMb) + "='" + v + "' is not valid; accepted: " + std::to_string(kMin) +
                      " to " + std::to_string(kMax) + " (MiB of names per process)");
  else
    *out = mb << 20;
}

}  // namespace

Result<Config> config_from_env(const GetEnv& get) {
  Config c;
  std::vector<std::string> messages;
  std::vector<std::string>* errors = &messages;
  if (const char* v = get(env::kSchedule)) {
    if (auto s = parse_schedule(v))
      c.schedule = *s;
    else
      errors->push_back(std::string(env::kSchedule) + "='" + v + "': " + s.error());
  }
  if (const char* v = get(env::kStep)) {
    if (auto r = parse_step_rule(v))
      c.step = *r;
    else
      errors->push_back(std::string(env::kStep) + "='" + v + "': " + r.error());
  }
  if (const char* v = get(env::kActivities)) {
    Activities a{false, false};
    std::string_view s(v);
    bool ok = !s.empty();
    while (ok && !s.empty()) {
      size_t comma = s.find(',');
      std::string_view item = s.substr(0, comma);
      s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
      if (item == "cpu" || item == "CPU")
        a.cpu = true;
      else if (item == "cuda" || item == "CUDA")
        a.cuda = true;
      else
        ok = false;
    }
    if (ok)
      c.activities = a;
    else
      errors->push_back(std::string(env::kActivities) + "='" + v + "' is not valid; accepted: cpu, cuda or cpu,cuda");
  }
  if (const char* v = get(env::kRecordShapes)) parse_bool(env::kRecordShapes, v, &c.record_shapes, errors);
  if (const char* v = get(env::kProfileMemory)) parse_bool(env::kProfileMemory, v, &c.profile_memory, errors);
  if (const char* v = get(env::kWithStack)) parse_bool(env::kWithStack, v, &c.with_stack, errors);
  if (const char* v = get(env::kPythonAttribution))
    parse_bool(env::kPythonAttribution, v, &c.python_attribution, errors);
  if (const char* v = get(env::kNativeStack)) parse_bool(env::kNativeStack, v, &c.native_stack, errors);
  if (const char* v = get(env::kBridgeBuild)) parse_bool(env::kBridgeBuild, v, &c.bridge_build, errors);
  if (const char* v = get(env::kOnDemand)) parse_bool(env::kOnDemand, v, &c.on_demand, errors);
  if (const char* v = get(env::kWaitDescendants)) parse_bool(env::kWaitDescendants, v, &c.wait_descendants, errors);
  if (const char* v = get(env::kOutput)) {
    if (*v)
      c.output = v;
    else
      errors->push_back(std::string(env::kOutput) + " is empty; accepted: a directory path");
  }
  if (const char* v = get(env::kOnTraceReady)) c.on_trace_ready = v;
  if (const char* v = get(env::kLogLevel)) {
    std::string_view s(v);
    static constexpr std::string_view kLevels[] = {"trace",   "debug", "info",     "warn",
                                                   "warning", "error", "critical", "off"};
    bool ok = false;
    for (auto l : kLevels) ok |= (s == l);
    if (ok)
      c.log_level = std::string(s);
    else
      errors->push_back(std::string(env::kLogLevel) + "='" + v +
                        "' is not a level; accepted: trace, debug, info, warn, error, critical, off");
  }
  if (const char* v = get(env::kRingKb)) {
    std::string_view s(v);
    uint64_t kb = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), kb);
    if (ec != std::errc() || end != s.data() + s.size() || kb < 64 || kb > (1u << 20) || (kb & (kb - 1)))
      errors->push_back(std::string(env::kRingKb) + "='" + v +
                        "' is not valid; accepted: a power of two from 64 to 1048576 (KiB per thread)");
    else
      c.ring_bytes = kb * 1024;
  }
  if (const char* v = get(env::kBridgeBuildTimeout)) {
    std::string_view s(v);
    uint32_t seconds = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), seconds);
    if (ec != std::errc() || end != s.data() + s.size() || seconds == 0 || seconds > 86400)
      errors->push_back(std::string(env::kBridgeBuildTimeout) + "='" + v +
                        "' is not valid; accepted: whole seconds from 1 to 86400");
    else
      c.bridge_build_timeout_s = seconds;
  }
  c.bridge_cache = bridge::cache_root(get);
  if (const char* v = get(env::kNamesMb)) parse_names_mb(v, &c.names_bytes, errors);
  if (messages.empty()) return c;
  std::string joined;
  for (const std::string& m : messages) joined += (joined.empty() ? "" : "\n") + m;
  return Status::error(std::move(joined));
}

}  // namespace ptprof
