#include "ptprof/schedule.hpp"

#include <charconv>
#include <string>

namespace ptprof {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

constexpr const char* kAccepted =
    "accepted: comma-separated key=value with keys skip_first, wait, warmup, active, repeat "
    "and non-negative whole numbers (active >= 1), e.g. wait=1,warmup=1,active=3,repeat=2";

}  // namespace

std::string Schedule::to_string() const {
  if (!enabled) return "";
  return "skip_first=" + std::to_string(skip_first) + ",wait=" + std::to_string(wait) +
         ",warmup=" + std::to_string(warmup) + ",active=" + std::to_string(active) +
         ",repeat=" + std::to_string(repeat);
}

Result<Schedule> parse_schedule(std::string_view text) {
  Schedule s;
  text = trim(text);
  if (text.empty()) return s;
  s.enabled = true;
  bool seen[5] = {};
  for (bool more = true; more;) {
    size_t comma = text.find(',');
    std::string_view item = trim(text.substr(0, comma));
    more = comma != std::string_view::npos;
    text = more ? text.substr(comma + 1) : std::string_view();
    if (item.empty()) {
      return Status::error("empty item in schedule; " + std::string(kAccepted));
    }
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Status::error("'" + std::string(item) + "' has no '='; " + kAccepted);
    }
    std::string_view key = trim(item.substr(0, eq));
    std::string_view value = trim(item.substr(eq + 1));
    static constexpr std::string_view kKeys[5] = {"skip_first", "wait", "warmup", "active", "repeat"};
    uint64_t* fields[5] = {&s.skip_first, &s.wait, &s.warmup, &s.active, &s.repeat};
    int index = -1;
    for (int i = 0; i < 5; ++i)
      if (key == kKeys[i]) index = i;
    if (index < 0) {
      return Status::error("unknown key '" + std::string(key) + "'; " + kAccepted);
    }
    if (seen[index]) {
      return Status::error("'" + std::string(key) + "' given twice; " + kAccepted);
    }
    seen[index] = true;
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (value.empty() || ec != std::errc() || end != value.data() + value.size() || v > (1ull << 40)) {
      return Status::error("'" + std::string(key) + "' has value '" + std::string(value) +
                           "', which is not a non-negative whole number; " + kAccepted);
    }
    *fields[index] = v;
  }
  if (s.active == 0) {
    return Status::error("'active' has value '0', but at least 1 step must be active; " + std::string(kAccepted));
  }
  return s;
}

Result<StepRule> parse_step_rule(std::string_view text) {
  StepRule r;
  text = trim(text);
  if (text.empty() || text == "optimizer") return r;
  if (text == "manual") {
    r.kind = StepRule::Kind::Manual;
  } else if (text == "cudaProfilerApi") {
    r.kind = StepRule::Kind::CudaProfilerApi;
  } else if (text == "dataloader") {
    r.kind = StepRule::Kind::DataLoader;
  } else if (text == "forward") {
    r.kind = StepRule::Kind::Forward;
  } else if (text == "auto") {
    r.kind = StepRule::Kind::Auto;
  } else {
    r.kind = StepRule::Kind::Named;
    r.name = std::string(text);
  }
  return r;
}

std::string StepRule::describe() const {
  switch (kind) {
    case Kind::Optimizer:
      return "optimizer (the end of Optimizer.step)";
    case Kind::Manual:
      return "manual (ptprof.step() only)";
    case Kind::CudaProfilerApi:
      return "cudaProfilerApi (each cudaProfilerStart..Stop)";
    case Kind::DataLoader:
      return "dataloader (the end of each DataLoader batch, enumerate(DataLoader)#...__next__)";
    case Kind::Auto:
      return "auto (the optimizer if one steps, else the DataLoader, else the model's forward)";
    case Kind::Forward:
      return "forward (the end of each outermost call of the model's forward)";
    case Kind::Named:
      break;
  }
  return "'" + name + "' (the end of each " + (watches_ops() ? "operator" : "record_function or range") +
         " of that name)";
}

}  // namespace ptprof
