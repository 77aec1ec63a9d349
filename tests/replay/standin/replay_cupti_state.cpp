#include "replay_cupti_state.hpp"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

namespace replay_cupti {

namespace {

constexpr int64_t kDefaultOffsetNs = 7000000000123;

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (*end != '\0') {
    std::fprintf(stderr, "ptprof replay CUPTI: %s=%s is not an integer; using %lld\n", name, v, (long long)fallback);
    return fallback;
  }
  return n;
}

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, value) == 0;
}

int64_t g_offset_ns = kDefaultOffsetNs;  // set once, in state(), before anything reads the clock

// The external ids this thread pushed, per kind (index: the kind).
thread_local std::array<std::vector<uint64_t>, kExternalKinds> t_external;

}  // namespace

uint64_t host_now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec);
}

uint64_t cupti_now() { return uint64_t(int64_t(host_now()) + g_offset_ns); }

CUpti_ActivityKind State::kernel_kind() const {
  return is_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) || !is_enabled(CUPTI_ACTIVITY_KIND_KERNEL)
             ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
             : CUPTI_ACTIVITY_KIND_KERNEL;
}

bool State::records(WorkKind k) const {
  switch (k) {
    case WorkKind::Kernel:
      return is_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) || is_enabled(CUPTI_ACTIVITY_KIND_KERNEL);
    case WorkKind::Memcpy:
      return is_enabled(CUPTI_ACTIVITY_KIND_MEMCPY);
    case WorkKind::Memset:
      return is_enabled(CUPTI_ACTIVITY_KIND_MEMSET);
    case WorkKind::Sync:
      return is_enabled(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  }
  return false;
}

CUpti_CallbackFunc State::callback_for(CUpti_CallbackDomain domain, uint32_t cbid, void** data) {
  std::lock_guard lock(mu);
  if (!subscribed || !callback) return nullptr;
  if (!domains_on.count(uint32_t(domain)) && !callbacks_on.count({uint32_t(domain), cbid})) return nullptr;
  *data = callback_data;
  return callback;
}

State& state() {
  static State* s = [] {
    auto* st = new State;
    g_offset_ns = env_int("PTPROF_REPLAY_CUPTI_OFFSET_NS", kDefaultOffsetNs);
    st->thread_id_is_gettid = env_is("PTPROF_REPLAY_THREAD_ID", "gettid");
    st->timestamp_is_host = env_is("PTPROF_REPLAY_TIMESTAMP", "host");
    st->correlation_shift = env_int("PTPROF_REPLAY_CORRELATION_SHIFT", 0);
    Delivery::Options o;
    o.reverse = env_is("PTPROF_REPLAY_BUFFER_ORDER", "reverse");
    o.log = env_is("PTPROF_REPLAY_CUPTI_LOG", "1");
    o.drop_late_correlations = env_is("PTPROF_REPLAY_LATE_CORRELATIONS", "drop");
    o.drop_work = uint64_t(std::max<int64_t>(0, env_int("PTPROF_REPLAY_DROPPED", 0)));
    st->delivery = new Delivery(o, cupti_now, [st](Record& r) {
      const auto kind = r.kind();
      if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || kind == CUPTI_ACTIVITY_KIND_KERNEL) {
        if (!st->records(WorkKind::Kernel)) return false;
        reinterpret_cast<CUpti_Activity*>(r.bytes)->kind = st->kernel_kind();
        return true;
      }
      return st->is_enabled(kind);
    });
    const char* path = std::getenv("PTPROF_REPLAY_PLAN");
    std::string error;
    if (!path || !*path)
      std::fprintf(stderr, "ptprof replay CUPTI: PTPROF_REPLAY_PLAN is not set: no GPU work will be delivered\n");
    else if (!st->plan.read(path, error))
      std::fprintf(stderr, "ptprof replay CUPTI: bad plan (%s): no GPU work will be delivered\n", error.c_str());
    pthread_atfork(nullptr, nullptr, [] { state().delivery->forget_worker(); });
    return st;
  }();
  return *s;
}

uint32_t cupti_thread_id(const State& s) {
  if (s.thread_id_is_gettid) return uint32_t(syscall(SYS_gettid));
  const pthread_t self = pthread_self();
  uint32_t low = 0;
  std::memcpy(&low, &self, sizeof low);
  return low;
}

std::vector<uint64_t>& external_stack(CUpti_ExternalCorrelationKind kind) { return t_external[kind]; }

bool valid_external_kind(CUpti_ExternalCorrelationKind k) {
  return k > CUPTI_EXTERNAL_CORRELATION_KIND_INVALID && size_t(k) < kExternalKinds;
}

}  // namespace replay_cupti
