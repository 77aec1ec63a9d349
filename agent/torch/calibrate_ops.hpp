// The operator cost of this process (agent/src/cost_calibration.hpp): tiny
// aten ops timed with ptprof's operator callback on and off, interleaved,
// best of each; the difference per op is what ptprof adds to one operator,
// torch's callback work included. The agent sends the events of the timed
// ops to a private ring, so they never reach the trace. A few milliseconds,
// once, when torch is loaded.
#pragma once
#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "bridge_api.h"

namespace ptprof::torch_bridge {

inline uint32_t measure_op_cost_ps(at::CallbackHandle op_callback) {
  constexpr int kOps = 400, kRounds = 6;
  using Clock = std::chrono::steady_clock;
  at::Tensor a = at::ones({1}), b = at::ones({1}), c = at::empty({1});
  auto per_op_ns = [&] {
    const auto start = Clock::now();
    for (int i = 0; i < kOps; ++i) at::add_out(c, a, b);
    return std::chrono::duration<double, std::nano>(Clock::now() - start).count() / kOps;
  };
  at::add_out(c, a, b);  // first call: dispatch caches, the name's interning
  double on = 1e300, off = 1e300;
  for (int round = 0; round < kRounds; ++round) {
    ptprof_agent_calibration_rewind();
    on = std::min(on, per_op_ns());
    at::disableCallback(op_callback);
    off = std::min(off, per_op_ns());
    at::reenableCallback(op_callback);
  }
  return on > off ? uint32_t(std::min((on - off) * 1000, 4e9)) : 0;
}

// Measures and publishes the cost; the callback must be enabled.
inline void calibrate_op_cost(at::CallbackHandle op_callback) {
  if (!ptprof_agent_calibration_begin()) return;
  uint32_t ps = 0;
  try {
    ps = measure_op_cost_ps(op_callback);
  } catch (...) {  // a torch that cannot run ops yet: no figure, nothing else changes
    at::reenableCallback(op_callback);
  }
  ptprof_agent_calibration_end(ps);
}

}  // namespace ptprof::torch_bridge
