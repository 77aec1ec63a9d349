#include "cupti/device_descriptions.hpp"

#include "base/log.hpp"

namespace ptprof::agent::cupti {

void DeviceDescriptions::ask(CUptiResult (*recording_clock)(uint64_t*)) {
  if (state_ != State::Unasked) return;
  // The driver is loaded (decide): one that lacks the questions never has them.
  if (!queries_.get_count && !find_device_queries(queries_)) {
    log(Level::Debug, "libcuda.so.1 lacks the device queries: no device properties");
    state_ = State::Unavailable;
    return;
  }
  const size_t n = agent_call_count_.load(std::memory_order_relaxed);
  if (recording_clock && n == kMaxAgentCalls) return;
  uint64_t from = 0, to = 0;
  if (recording_clock) recording_clock(&from);
  std::vector<std::string> described;
  const DevicesAnswer answer = describe_devices(queries_, described);
  if (recording_clock) {
    recording_clock(&to);
    agent_calls_[n] = {from, to};
    agent_call_count_.store(n + 1, std::memory_order_release);
  }
  switch (answer) {
    case DevicesAnswer::NotInitialized:
      if (!told_not_initialized_) log(Level::Debug, "the CUDA driver is not initialised yet: device properties later");
      told_not_initialized_ = true;
      return;
    case DevicesAnswer::Failed:
      log(Level::Debug, "the CUDA driver did not describe its devices: no device properties");
      state_ = State::Unavailable;
      return;
    case DevicesAnswer::Described:
      json_ = std::move(described);
      state_ = State::Described;
      return;
  }
}

}  // namespace ptprof::agent::cupti
