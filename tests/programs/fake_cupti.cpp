// A stand-in libcupti for the agent's CUPTI consumer (tests only): it logs
// every call the agent makes to $FAKE_CUPTI_LOG, one line each, and answers
// as CUPTI would. $FAKE_CUPTI_BUSY=N makes the N-th cuptiSubscribe fail as
// when another tool holds CUPTI. A flush hands the agent one buffer with a
// kernel record and the external correlation of the innermost pushed id,
// through the callbacks the agent registered.
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

namespace {

CUpti_BuffersCallbackRequestFunc g_request = nullptr;
CUpti_BuffersCallbackCompleteFunc g_complete = nullptr;
int g_subscribes = 0;
std::vector<uint64_t> g_pushed;
uint32_t g_correlation = 0;

void log_line(const char* fmt, unsigned long long a = 0) {
  const char* path = std::getenv("FAKE_CUPTI_LOG");
  if (!path) return;
  if (FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, fmt, a);
    std::fputc('\n', f);
    std::fclose(f);
  }
}

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

}  // namespace

extern "C" {

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc, void*) {
  ++g_subscribes;
  const char* busy = std::getenv("FAKE_CUPTI_BUSY");
  if (busy && std::atoi(busy) == g_subscribes) {
    log_line("subscribe busy");
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  static int handle;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&handle);
  log_line("subscribe ok");
  return CUPTI_SUCCESS;
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle) {
  log_line("unsubscribe");
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                           CUpti_BuffersCallbackCompleteFunc complete) {
  g_request = request;
  g_complete = complete;
  log_line("register");
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  log_line("enable %llu", kind);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  log_line("disable %llu", kind);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetTimestamp(uint64_t* t) {
  *t = now_ns();
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t id) {
  g_pushed.push_back(id);
  log_line("push %llu", id);
  return kind == CUPTI_EXTERNAL_CORRELATION_KIND_INVALID ? CUPTI_ERROR_INVALID_PARAMETER : CUPTI_SUCCESS;
}

CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind, uint64_t* last) {
  if (g_pushed.empty()) return CUPTI_ERROR_QUEUE_EMPTY;
  *last = g_pushed.back();
  g_pushed.pop_back();
  log_line("pop %llu", *last);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  log_line("flush %llu", flag);
  if (!g_request || !g_complete) return CUPTI_SUCCESS;
  uint8_t* buffer = nullptr;
  size_t size = 0, max_records = 0;
  g_request(&buffer, &size, &max_records);
  if (!buffer || size < 1024) return CUPTI_SUCCESS;
  const uint64_t t = now_ns();
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = t - 2000;
  k.end = t - 1000;
  k.correlationId = ++g_correlation;
  k.name = "_Z10fake_gemmPf";  // demangled by the agent: fake_gemm(float*)
  std::memcpy(buffer, &k, sizeof k);
  CUpti_ActivityExternalCorrelation e{};
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
  e.externalId = g_pushed.empty() ? 0 : g_pushed.back();
  e.correlationId = k.correlationId;
  const size_t at = (sizeof k + 7) & ~size_t(7);
  std::memcpy(buffer + at, &e, sizeof e);
  g_complete(nullptr, 0, buffer, size, at + sizeof e);
  log_line("completed");
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  size_t at = 0;
  if (*record) {
    at = size_t(reinterpret_cast<uint8_t*>(*record) - buffer) +
         ((*record)->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? sizeof(CUpti_ActivityKernel10)
                                                                   : sizeof(CUpti_ActivityExternalCorrelation));
    at = (at + 7) & ~size_t(7);
  }
  if (at >= valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(buffer + at);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain, uint32_t, const char** name) {
  *name = "cudaFake_v1";
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetResultString(CUptiResult r, const char** s) {
  *s = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
                                                           : "CUPTI_ERROR_FAKE";
  return CUPTI_SUCCESS;
}

}  // extern "C"
