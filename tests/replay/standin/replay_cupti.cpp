// The GPU replay's (issue 54) trace-driven stand-in for libcupti: what the
// agent (agent/src/cupti/) gets from CUPTI on a GPU, made from a recorded
// run's plan ($PTPROF_REPLAY_PLAN, tests/replay/replay_plan.py). The replay's
// driver (tests/replay/replay_driver.py) re-enacts the run's CPU side and
// tells this library when each of the trace's CUDA calls happens
// (ptprof_replay_call, where real CUPTI's API-enter callback would be); the
// library then behaves as CUPTI does:
// - the callback API: the subscriber's callback runs for a call's API enter
//   and exit when the subscriber enabled that domain/cbid (cuptiEnableCallback,
//   cuptiEnableDomain);
// - external correlations: per-thread stacks per kind (cuptiActivityPush/
//   PopExternalCorrelationId); a call takes the top id of each kind pushed on
//   its thread and gets one EXTERNAL_CORRELATION record per kind;
// - activity records in the CUDA 13 layouts (replay_cupti_records.hpp), of
//   the kinds enabled when the work was launched, with the plan's times on
//   CUPTI's clock: cuptiGetTimestamp() = CLOCK_MONOTONIC ns +
//   $PTPROF_REPLAY_CUPTI_OFFSET_NS (default 7000000000123, signed), plan time
//   t = the timestamp at ptprof_replay_begin + t, whatever the CPU's lag;
// - delivery as CUPTI's (replay_cupti_delivery.hpp): its own worker thread,
//   records only once they have ended, sorted by end across streams, all of
//   them at a forced flush.
// GPU work of no call (correlation 0, or one no call line has) is recorded
// when its start passes, if its kind is enabled then.
//
// Test knobs: $PTPROF_REPLAY_BUFFER_ORDER=reverse (each delivery's records in
// reverse order), $PTPROF_REPLAY_DROPPED=N (the first N GPU work records are
// dropped and cuptiActivityGetNumDroppedRecords reports them, once),
// $PTPROF_REPLAY_THREAD_ID=gettid (API records name the kernel's thread id;
// by default the low 32 bits of pthread_self(), as CUPTI does: Kineto maps
// that id back to the system's, libkineto ThreadUtil.cpp threadId()).
// What a client with a bug would see (test_gpu_replay_honesty.py):
// $PTPROF_REPLAY_CORRELATION_SHIFT=N (external correlation records name the
// call's correlation + N: a broken join), $PTPROF_REPLAY_TIMESTAMP=host
// (cuptiGetTimestamp without the offset the records carry: the offset
// ignored), $PTPROF_REPLAY_LATE_CORRELATIONS=drop (external correlations
// that a delivery puts after their work are left out: a client that assumes
// CUPTI's order; replay_cupti_delivery.hpp).
//
// No plan, or a bad one: one line on stderr, and the library still answers
// every CUPTI call, delivering nothing.
#include <cupti.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "replay_cupti_records.hpp"
#include "replay_cupti_state.hpp"

#define REPLAY_EXPORT extern "C" __attribute__((visibility("default")))

using namespace replay_cupti;

namespace {

// The API enter/exit callbacks of one call, as CUPTI makes them.
void run_callbacks(State& s, const PlanCall& c) {
  const CUpti_CallbackDomain domain = c.driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
  void* data = nullptr;
  const CUpti_CallbackFunc callback = s.callback_for(domain, c.cbid, &data);
  if (!callback) return;
  uint64_t correlation_data = 0;  // the subscriber's, from enter to exit
  const char* name = c.name;
  CUpti_CallbackData cb{};
  cb.functionName = name;
  cb.correlationData = &correlation_data;
  cb.correlationId = c.correlation;
  cb.callbackSite = CUPTI_API_ENTER;
  callback(data, domain, CUpti_CallbackId(c.cbid), &cb);
  cb.callbackSite = CUPTI_API_EXIT;
  callback(data, domain, CUpti_CallbackId(c.cbid), &cb);
}

// The plan's GPU work of no call, recorded as its start passes.
void schedule_unlaunched(State& s, uint64_t begin) {
  std::vector<std::pair<uint64_t, Record>> work;
  for (size_t i : s.plan.orphan_work()) {
    const PlanWork& w = s.plan.work()[i];
    work.emplace_back(at(begin, w.start),
                      work_record(w, begin, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, false, ++s.grid_id));
  }
  s.delivery->add_unlaunched(std::move(work));
}

// Takes now as the plan's t = 0 unless it has one; false when it had.
bool start_plan(State& s, uint64_t& begin) {
  uint64_t expected = 0;
  const uint64_t now = cupti_now();
  if (!s.begin.compare_exchange_strong(expected, now)) {
    begin = expected;
    return false;
  }
  begin = now;
  schedule_unlaunched(s, now);
  return true;
}

}  // namespace

// ---- the replay's entry points (replay-spec.md, "Runtime interface")

REPLAY_EXPORT void ptprof_replay_begin(void) {
  uint64_t begin = 0;
  if (!start_plan(state(), begin))
    std::fprintf(stderr, "ptprof replay CUPTI: ptprof_replay_begin after time 0 was set: the first time 0 stays\n");
}

REPLAY_EXPORT int ptprof_replay_call(uint32_t correlation) {
  State& s = state();
  const PlanCall* c = s.plan.call(correlation);
  if (!c) return -1;
  uint64_t begin = s.begin.load();
  if (begin == 0) start_plan(s, begin);  // a driver that never said when time 0 was: now is
  run_callbacks(s, *c);
  std::vector<Record> out;
  if (s.is_enabled(c->driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME))
    out.push_back(api_record(*c, begin, uint32_t(getpid()), cupti_thread_id(s)));
  if (s.is_enabled(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)) {
    for (size_t k = 1; k < kExternalKinds; ++k) {
      if (external_stack(CUpti_ExternalCorrelationKind(k)).empty()) continue;
      out.push_back(external_record(CUpti_ExternalCorrelationKind(k),
                                    external_stack(CUpti_ExternalCorrelationKind(k)).back(),
                                    uint32_t(int64_t(c->correlation) + s.correlation_shift), at(begin, c->start)));
    }
  }
  if (const std::vector<size_t>* work = s.plan.work_of(correlation)) {
    const bool async = std::strstr(c->name, "Async") != nullptr;
    for (size_t i : *work) {
      const PlanWork& w = s.plan.work()[i];
      if (s.records(w.kind)) out.push_back(work_record(w, begin, s.kernel_kind(), async, ++s.grid_id));
    }
  }
  s.delivery->queue(std::move(out));
  return 0;
}

// ---- CUPTI's API, as far as ptprof (agent/src/cupti/cupti_library.cpp) uses it

REPLAY_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                         void* userdata) {
  if (!subscriber) return CUPTI_ERROR_INVALID_PARAMETER;
  State& s = state();
  {
    std::lock_guard lock(s.mu);
    if (s.subscribed) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    s.subscribed = true;
    s.callback = callback;
    s.callback_data = userdata;
    s.callbacks_on.clear();
    s.domains_on.clear();
  }
  static int handle;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&handle);
  s.delivery->start_worker();
  return CUPTI_SUCCESS;
}

REPLAY_EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle) {
  State& s = state();
  {
    std::lock_guard lock(s.mu);
    if (!s.subscribed) return CUPTI_ERROR_INVALID_PARAMETER;
    s.subscribed = false;
    s.callback = nullptr;
    s.callback_data = nullptr;
    s.callbacks_on.clear();
    s.domains_on.clear();
  }
  s.delivery->stop_worker();
  return CUPTI_SUCCESS;
}

REPLAY_EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain,
                                              CUpti_CallbackId cbid) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.subscribed) return CUPTI_ERROR_INVALID_PARAMETER;
  if (enable)
    s.callbacks_on.insert({uint32_t(domain), uint32_t(cbid)});
  else
    s.callbacks_on.erase({uint32_t(domain), uint32_t(cbid)});
  return CUPTI_SUCCESS;
}

REPLAY_EXPORT CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.subscribed) return CUPTI_ERROR_INVALID_PARAMETER;
  if (enable)
    s.domains_on.insert(uint32_t(domain));
  else
    s.domains_on.erase(uint32_t(domain));
  return CUPTI_SUCCESS;
}

REPLAY_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                         CUpti_BuffersCallbackCompleteFunc completed) {
  if (!requested || !completed) return CUPTI_ERROR_INVALID_PARAMETER;
  state().delivery->set_callbacks(requested, completed);
  return CUPTI_SUCCESS;
}

REPLAY_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  State& s = state();
  if (size_t(kind) >= kKinds || kind == CUPTI_ACTIVITY_KIND_INVALID) return CUPTI_ERROR_INVALID_KIND;
  s.enabled[kind] = true;
  s.delivery->start_worker();
  return CUPTI_SUCCESS;
}

REPLAY_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  State& s = state();
  if (size_t(kind) >= kKinds || kind == CUPTI_ACTIVITY_KIND_INVALID) return CUPTI_ERROR_INVALID_KIND;
  s.enabled[kind] = false;
  return CUPTI_SUCCESS;
}

REPLAY_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  State& s = state();
  if (!s.delivery->has_callbacks()) return CUPTI_ERROR_INVALID_OPERATION;
  s.delivery->deliver((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0);
  return CUPTI_SUCCESS;
}

// Deprecated by CUPTI (context and stream ignored): the same as FlushAll.
REPLAY_EXPORT CUptiResult cuptiActivityFlush(CUcontext, uint32_t, uint32_t flag) { return cuptiActivityFlushAll(flag); }

REPLAY_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  return next_record(buffer, valid, record);
}

// CUPTI keeps one global queue since CUDA 6: context and stream are ignored.
REPLAY_EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  if (!dropped) return CUPTI_ERROR_INVALID_PARAMETER;
  *dropped = state().delivery->take_dropped();
  return CUPTI_SUCCESS;
}

REPLAY_EXPORT CUptiResult cuptiGetTimestamp(uint64_t* timestamp) {
  if (!timestamp) return CUPTI_ERROR_INVALID_PARAMETER;
  *timestamp = state().timestamp_is_host ? host_now() : cupti_now();  // the offset is read in state()
  return CUPTI_SUCCESS;
}

REPLAY_EXPORT CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t id) {
  if (!valid_external_kind(kind)) return CUPTI_ERROR_INVALID_PARAMETER;
  external_stack(kind).push_back(id);
  return CUPTI_SUCCESS;
}

REPLAY_EXPORT CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t* last) {
  if (!valid_external_kind(kind)) return CUPTI_ERROR_INVALID_PARAMETER;
  auto& stack = external_stack(kind);
  if (stack.empty()) return CUPTI_ERROR_QUEUE_EMPTY;
  if (last) *last = stack.back();
  stack.pop_back();
  return CUPTI_SUCCESS;
}

REPLAY_EXPORT CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
  if (!name || (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API))
    return CUPTI_ERROR_INVALID_PARAMETER;
  const char* n = state().plan.api_name(domain == CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  if (!n) return CUPTI_ERROR_INVALID_PARAMETER;
  *name = n;
  return CUPTI_SUCCESS;
}

REPLAY_EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char** str) {
  if (!str) return CUPTI_ERROR_INVALID_PARAMETER;
  switch (result) {
    case CUPTI_SUCCESS:
      *str = "CUPTI_SUCCESS";
      break;
    case CUPTI_ERROR_INVALID_PARAMETER:
      *str = "CUPTI_ERROR_INVALID_PARAMETER";
      break;
    case CUPTI_ERROR_INVALID_OPERATION:
      *str = "CUPTI_ERROR_INVALID_OPERATION";
      break;
    case CUPTI_ERROR_MAX_LIMIT_REACHED:
      *str = "CUPTI_ERROR_MAX_LIMIT_REACHED";
      break;
    case CUPTI_ERROR_QUEUE_EMPTY:
      *str = "CUPTI_ERROR_QUEUE_EMPTY";
      break;
    case CUPTI_ERROR_INVALID_KIND:
      *str = "CUPTI_ERROR_INVALID_KIND";
      break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
      break;
    default:
      *str = "CUPTI_ERROR_UNKNOWN";
      return CUPTI_ERROR_INVALID_PARAMETER;
  }
  return CUPTI_SUCCESS;
}

// No graph is ever made in a replay (the plan's graph ids ride on the work
// records): a handle's id is the handle, as the tests' other stand-in says.
REPLAY_EXPORT CUptiResult cuptiGetGraphNodeId(CUgraphNode node, uint64_t* id) {
  if (!node || !id) return CUPTI_ERROR_INVALID_PARAMETER;
  *id = reinterpret_cast<uintptr_t>(node);
  return CUPTI_SUCCESS;
}

REPLAY_EXPORT CUptiResult cuptiGetGraphId(CUgraph graph, uint32_t* id) {
  if (!graph || !id) return CUPTI_ERROR_INVALID_PARAMETER;
  *id = uint32_t(reinterpret_cast<uintptr_t>(graph));
  return CUPTI_SUCCESS;
}
