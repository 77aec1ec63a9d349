// The stand-in CUPTI's process-wide state: its settings from the
// environment, the plan, the enabled activity kinds, the subscriber, the
// delivery, and each thread's external correlation stacks. Made at the
// first CUPTI call (or replay call) and never destroyed: the client may call
// in from its exit handlers.
#pragma once
#include <cupti.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "replay_cupti_delivery.hpp"
#include "replay_cupti_plan.hpp"

namespace replay_cupti {

constexpr size_t kKinds = CUPTI_ACTIVITY_KIND_COUNT;
constexpr size_t kExternalKinds = CUPTI_EXTERNAL_CORRELATION_KIND_SIZE;

// The CUPTI clock of the records: CLOCK_MONOTONIC ns + $PTPROF_REPLAY_CUPTI_OFFSET_NS.
uint64_t cupti_now();
// CLOCK_MONOTONIC ns: what cuptiGetTimestamp answers with $PTPROF_REPLAY_TIMESTAMP=host.
uint64_t host_now();

struct State {
  Plan plan;
  bool thread_id_is_gettid = false;
  // $PTPROF_REPLAY_TIMESTAMP=host: cuptiGetTimestamp answers the host's
  // clock while the records keep the offset, so a client aligns the clocks
  // as if the offset were 0 (as one that ignored it would).
  bool timestamp_is_host = false;
  // $PTPROF_REPLAY_CORRELATION_SHIFT=N: external correlation records name
  // the call's correlation id + N, so a client joins each call's work to
  // the op of the call N before it, or to none (as a broken join would).
  int64_t correlation_shift = 0;
  std::atomic<uint64_t> begin{0};  // the CUPTI time of the plan's t = 0; 0: not begun
  std::array<std::atomic<bool>, kKinds> enabled{};
  std::atomic<int64_t> grid_id{0};

  std::mutex mu;  // the subscriber
  bool subscribed = false;
  CUpti_CallbackFunc callback = nullptr;
  void* callback_data = nullptr;
  std::set<std::pair<uint32_t, uint32_t>> callbacks_on;  // (domain, cbid)
  std::set<uint32_t> domains_on;

  Delivery* delivery = nullptr;

  bool is_enabled(CUpti_ActivityKind k) const { return size_t(k) < kKinds && enabled[k].load(); }
  // A kernel record is of whichever kernel kind the client enabled.
  CUpti_ActivityKind kernel_kind() const;
  // Whether work of this kind is recorded now (its activity kind enabled).
  bool records(WorkKind k) const;
  // The subscriber's callback when it enabled (domain, cbid), else null.
  CUpti_CallbackFunc callback_for(CUpti_CallbackDomain domain, uint32_t cbid, void** data);
};

State& state();

// The thread id CUPTI puts in API records: the low 32 bits of pthread_self()
// (what Kineto maps back to the system's, libkineto ThreadUtil.cpp
// threadId()); the kernel's thread id with $PTPROF_REPLAY_THREAD_ID=gettid.
uint32_t cupti_thread_id(const State& s);

// This thread's pushed external ids of `kind` (a valid one).
std::vector<uint64_t>& external_stack(CUpti_ExternalCorrelationKind kind);
bool valid_external_kind(CUpti_ExternalCorrelationKind kind);

}  // namespace replay_cupti
