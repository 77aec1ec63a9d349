// A stand-in libcupti for the agent's CUPTI consumer (tests only): it logs
// every call the agent makes to $FAKE_CUPTI_LOG, one line each, and answers
// as CUPTI would. $FAKE_CUPTI_BUSY=N makes the N-th cuptiSubscribe fail as
// when another tool holds CUPTI; $FAKE_CUPTI_HELD=1 makes every one fail
// while it is set. A flush hands the agent one buffer with a
// kernel record and the external correlation of the innermost pushed id,
// through the callbacks the agent registered.
//
// $FAKE_CUPTI_OPS=1 models the GPU work of ops instead: each pushed id (an
// op's handle) "launches" one kernel (grid 4x1x1, block 128x1x1, 5 us from
// the push) and one 4096-byte HtoD copy (2 us), each with its own CUPTI
// correlation id and an external correlation to the id. A flush hands over
// the completed ones; the kernel of the op whose handle is
// $FAKE_CUPTI_PENDING is still running until a forced flush (as if the
// device had been synchronized just before it), which first sleeps
// $FAKE_CUPTI_FORCED_DELAY_MS (the synchronization's wait).
//
// CUDA graphs: the program stands in for CUDA's side through three
// functions of this library (it dlopens the library the agent loaded):
// fake_cupti_graph_capture (a node made, as stream capture makes one per
// launch: GRAPHNODE_CREATED), fake_cupti_graph_instantiate (a node copied:
// GRAPHNODE_CLONED) and fake_cupti_graph_launch (a replay: one kernel of
// the copy, 5 us, its correlation joined to the innermost pushed id, as the
// cudaGraphLaunch's would be). Callbacks reach the agent only while it is
// subscribed and has enabled them, as with CUPTI. A node's id is its handle.
// With $FAKE_CUPTI_GRAPHS=1 a flush hands over the replays' kernels.
#include <cupti.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>
#include <vector>

namespace {

CUpti_CallbackFunc g_callback = nullptr;
void* g_callback_data = nullptr;
bool g_subscribed = false;
bool g_graph_callbacks[2] = {false, false};  // GRAPHNODE_CREATED, GRAPHNODE_CLONED enabled
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

bool ops_mode() {
  const char* v = std::getenv("FAKE_CUPTI_OPS");
  return v && *v == '1';
}

// $FAKE_CUPTI_GRAPHS=1: flushes hand over the graph launches (and nothing else).
bool graphs_mode() {
  const char* v = std::getenv("FAKE_CUPTI_GRAPHS");
  return v && *v == '1';
}

uint64_t env_number(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : 0;
}

// FAKE_CUPTI_OPS: the launched work not yet handed over.
struct Launch {
  uint64_t external_id;
  uint32_t correlation;
  bool copy;            // else a kernel
  uint64_t start, end;  // end 0: still running
  uint64_t graph_node = 0;
  uint32_t graph = 0;
};
std::vector<Launch> g_launched;

void launch(uint64_t id) {
  const uint64_t t = now_ns();
  const bool pending = std::getenv("FAKE_CUPTI_PENDING") && env_number("FAKE_CUPTI_PENDING") == id;
  g_launched.push_back({id, ++g_correlation, false, t, pending ? 0 : t + 5000});
  g_launched.push_back({id, ++g_correlation, true, t + 5000, t + 7000});
}

size_t record_bytes(const CUpti_Activity* r) {
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return sizeof(CUpti_ActivityMemcpy6);
    default:
      return sizeof(CUpti_ActivityExternalCorrelation);
  }
}

template <class T>
void put(uint8_t* buffer, size_t& at, const T& record) {
  std::memcpy(buffer + at, &record, sizeof record);
  at = (at + sizeof record + 7) & ~size_t(7);
}

// Writes the completed launches (all of them when `forced`) into `buffer`.
size_t hand_over(uint8_t* buffer, size_t size, bool forced) {
  size_t at = 0;
  std::vector<Launch> kept;
  for (Launch l : g_launched) {
    if (l.end == 0 && forced) l.end = now_ns();
    if (l.end == 0 || at + 1024 > size) {
      kept.push_back(l);
      continue;
    }
    if (l.copy) {
      CUpti_ActivityMemcpy6 m{};
      m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
      m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
      m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;  // a plain tensor.cuda()'s copy
      m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
      m.bytes = 4096;
      m.start = l.start;
      m.end = l.end;
      m.correlationId = l.correlation;
      put(buffer, at, m);
    } else {
      CUpti_ActivityKernel10 k{};
      k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
      k.start = l.start;
      k.end = l.end;
      k.correlationId = l.correlation;
      k.gridX = 4;
      k.gridY = k.gridZ = 1;
      k.blockX = 128;
      k.blockY = k.blockZ = 1;
      k.name = "_Z9fake_gemmPf";
      k.graphNodeId = l.graph_node;
      k.graphId = l.graph;
      put(buffer, at, k);
    }
    if (l.external_id == 0) continue;  // launched outside any op
    CUpti_ActivityExternalCorrelation e{};
    e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
    e.externalId = l.external_id;
    e.correlationId = l.correlation;
    put(buffer, at, e);
  }
  g_launched = std::move(kept);
  return at;
}

// A resource callback, as CUPTI makes it, when the agent asked for it.
void graph_callback(CUpti_CallbackId cbid, CUpti_GraphData g) {
  const bool created = cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED;
  log_line(created ? "graph node created %llu" : "graph node cloned %llu",
           static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(g.node)));
  if (!g_subscribed || !g_callback || !g_graph_callbacks[created ? 0 : 1]) return;
  CUpti_ResourceData data{};
  data.resourceDescriptor = &g;
  g_callback(g_callback_data, CUPTI_CB_DOMAIN_RESOURCE, cbid, &data);
}

}  // namespace

extern "C" {

// The program's stand-ins for CUDA graph work (see the top of the file).
// Graphs and nodes are made-up handles: numbers, never dereferenced.
// NOLINTBEGIN(performance-no-int-to-ptr)
void fake_cupti_graph_capture(uint64_t node, uint32_t graph) {
  CUpti_GraphData g{};
  g.graph = reinterpret_cast<CUgraph>(uintptr_t(graph));
  g.node = reinterpret_cast<CUgraphNode>(uintptr_t(node));
  graph_callback(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, g);
}

void fake_cupti_graph_instantiate(uint64_t node, uint64_t copy, uint32_t graph) {
  CUpti_GraphData g{};
  g.graph = reinterpret_cast<CUgraph>(uintptr_t(graph));
  g.node = reinterpret_cast<CUgraphNode>(uintptr_t(copy));
  g.originalNode = reinterpret_cast<CUgraphNode>(uintptr_t(node));
  graph_callback(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, g);
}
// NOLINTEND(performance-no-int-to-ptr)

void fake_cupti_graph_launch(uint64_t copy, uint32_t graph) {
  const uint64_t t = now_ns();
  Launch l{g_pushed.empty() ? 0 : g_pushed.back(), ++g_correlation, false, t, t + 5000};
  l.graph_node = copy;
  l.graph = graph;
  g_launched.push_back(l);
  log_line("graph launch %llu", copy);
}

CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain,
                                CUpti_CallbackId cbid) {
  log_line("callback %llu", (unsigned long long)(domain)*1000 + cbid);
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED)
    g_graph_callbacks[0] = enable != 0;
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED)
    g_graph_callbacks[1] = enable != 0;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetGraphNodeId(CUgraphNode node, uint64_t* id) {
  *id = reinterpret_cast<uintptr_t>(node);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetGraphId(CUgraph graph, uint32_t* id) {
  *id = uint32_t(reinterpret_cast<uintptr_t>(graph));
  return CUPTI_SUCCESS;
}

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata) {
  ++g_subscribes;
  const char* busy = std::getenv("FAKE_CUPTI_BUSY");
  const char* held = std::getenv("FAKE_CUPTI_HELD");
  if ((busy && std::atoi(busy) == g_subscribes) || (held && *held == '1')) {
    log_line("subscribe busy");
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  static int handle;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&handle);
  g_callback = callback;
  g_callback_data = userdata;
  g_subscribed = true;
  log_line("subscribe ok");
  return CUPTI_SUCCESS;
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle) {
  // Unsubscribing ends the subscriber's callbacks.
  g_subscribed = false;
  g_graph_callbacks[0] = g_graph_callbacks[1] = false;
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
  if (ops_mode()) launch(id);
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
  if (ops_mode() || graphs_mode()) {
    const bool forced = flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED;
    if (forced) std::this_thread::sleep_for(std::chrono::milliseconds(env_number("FAKE_CUPTI_FORCED_DELAY_MS")));
    g_complete(nullptr, 0, buffer, size, hand_over(buffer, size, forced));
    log_line("completed");
    return CUPTI_SUCCESS;
  }
  const uint64_t t = now_ns();
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = t - 2000;
  k.end = t - 1000;
  k.correlationId = ++g_correlation;
  k.name = "_Z9fake_gemmPf";  // demangled by the agent: fake_gemm(float*)
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
    at = size_t(reinterpret_cast<uint8_t*>(*record) - buffer) + record_bytes(*record);
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
