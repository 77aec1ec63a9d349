// The GPUs' descriptions for the trace (cuda_devices.hpp), as the CUPTI
// consumer asks for them: of the driver until it can answer (cuInit), then
// kept. While CUPTI records driver calls the questions are the agent's own
// calls, and the spans they took are kept so that the conversion skips
// their records (cupti_activity.hpp, AgentCallSpan).
#pragma once
#include <cupti.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cupti/cuda_devices.hpp"
#include "cupti/cupti_activity.hpp"

namespace ptprof::agent::cupti {

class DeviceDescriptions {
 public:
  enum class State { Unasked, Described, Unavailable };

  // Asks the driver unless it has answered. `recording_clock`: CUPTI's
  // clock while CUPTI records driver calls (the question's span is then
  // kept), null while it does not. Under the consumer's lock.
  void ask(CUptiResult (*recording_clock)(uint64_t*));

  State state() const { return state_; }
  // One JSON object per device, once Described.
  const std::vector<std::string>& json() const { return json_; }

  // The spans of the questions asked while CUPTI recorded: only ever
  // appended (a buffer may be converted on CUPTI's thread meanwhile); when
  // full, the driver is asked only while CUPTI does not record.
  const AgentCallSpan* agent_calls() const { return agent_calls_; }
  size_t agent_call_count() const { return agent_call_count_.load(std::memory_order_acquire); }

 private:
  static constexpr size_t kMaxAgentCalls = 64;
  State state_ = State::Unasked;
  DeviceQueries queries_;
  bool told_not_initialized_ = false;
  std::vector<std::string> json_;
  AgentCallSpan agent_calls_[kMaxAgentCalls];
  std::atomic<size_t> agent_call_count_{0};
};

}  // namespace ptprof::agent::cupti
