#include "replay_cupti_records.hpp"

#include <cstring>

namespace replay_cupti {

namespace {

template <class T>
Record make(const T& r, uint64_t due, bool work) {
  Record out;
  std::memcpy(out.bytes, &r, sizeof r);
  out.size = uint32_t(sizeof r);
  out.due = due;
  out.work = work;
  out.correlation = r.correlationId;
  return out;
}

// Ids the plan writes as -1 when the trace had none; CUPTI's are unsigned.
uint32_t id_or_zero(int64_t v) { return v < 0 ? 0 : uint32_t(v); }

}  // namespace

Record api_record(const PlanCall& c, uint64_t begin, uint32_t pid, uint32_t tid) {
  CUpti_ActivityAPI a{};
  a.kind = c.driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = c.cbid;
  a.start = at(begin, c.start);
  a.end = at(begin, c.end);
  a.processId = pid;
  a.threadId = tid;
  a.correlationId = c.correlation;
  a.returnValue = 0;
  return make(a, a.end, false);
}

Record external_record(CUpti_ExternalCorrelationKind kind, uint64_t external_id, uint32_t correlation, uint64_t due) {
  CUpti_ActivityExternalCorrelation e{};
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = kind;
  e.externalId = external_id;
  e.correlationId = correlation;
  return make(e, due, false);
}

Record work_record(const PlanWork& w, uint64_t begin, CUpti_ActivityKind kernel_kind, bool async, int64_t grid_id) {
  const uint64_t start = at(begin, w.start), end = at(begin, w.end);
  switch (w.kind) {
    case WorkKind::Kernel: {
      CUpti_ActivityKernel10 k{};
      k.kind = kernel_kind;
      k.registersPerThread = w.registers;
      k.start = start;
      k.end = end;
      k.completed = end;  // no child kernels (CDP): completed = end
      k.deviceId = id_or_zero(w.device);
      k.contextId = id_or_zero(w.context);
      k.streamId = id_or_zero(w.stream);
      k.gridX = w.grid[0];
      k.gridY = w.grid[1];
      k.gridZ = w.grid[2];
      k.blockX = w.block[0];
      k.blockY = w.block[1];
      k.blockZ = w.block[2];
      k.staticSharedMemory = w.static_smem;
      k.dynamicSharedMemory = w.dynamic_smem;
      k.correlationId = w.correlation;
      k.gridId = grid_id;
      k.name = w.name;
      k.queued = w.has_queued ? at(begin, w.queued) : CUPTI_TIMESTAMP_UNKNOWN;
      k.submitted = w.has_submitted ? at(begin, w.submitted) : CUPTI_TIMESTAMP_UNKNOWN;
      k.launchType = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
      k.graphNodeId = w.graph_node;
      k.graphId = w.graph;
      return make(k, end, true);
    }
    case WorkKind::Memcpy: {
      CUpti_ActivityMemcpy6 m{};
      m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
      m.copyKind = w.copy_kind;
      m.srcKind = w.src_kind;
      m.dstKind = w.dst_kind;
      m.flags = async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
      m.bytes = w.bytes;
      m.start = start;
      m.end = end;
      m.deviceId = id_or_zero(w.device);
      m.contextId = id_or_zero(w.context);
      m.streamId = id_or_zero(w.stream);
      m.correlationId = w.correlation;
      m.runtimeCorrelationId = w.correlation;
      m.graphNodeId = w.graph_node;
      m.graphId = w.graph;
      m.copyCount = 1;
      return make(m, end, true);
    }
    case WorkKind::Memset: {
      CUpti_ActivityMemset4 m{};
      m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
      m.value = w.value;
      m.bytes = w.bytes;
      m.start = start;
      m.end = end;
      m.deviceId = id_or_zero(w.device);
      m.contextId = id_or_zero(w.context);
      m.streamId = id_or_zero(w.stream);
      m.correlationId = w.correlation;
      m.flags = async ? CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC : 0;
      m.memoryKind = w.dst_kind;
      m.graphNodeId = w.graph_node;
      m.graphId = w.graph;
      return make(m, end, true);
    }
    case WorkKind::Sync: {
      CUpti_ActivitySynchronization2 s{};
      s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
      s.type = CUpti_ActivitySynchronizationType(w.sync_type);
      s.start = start;
      s.end = end;
      s.correlationId = w.correlation;
      s.contextId = id_or_zero(w.context);
      // A context synchronization has no stream: CUPTI's invalid value, as
      // the trace's -1 (Kineto writes CUPTI's field as a signed int).
      s.streamId = w.stream < 0 ? CUPTI_SYNCHRONIZATION_INVALID_VALUE : uint32_t(w.stream);
      s.cudaEventId = w.has_event ? w.event : CUPTI_SYNCHRONIZATION_INVALID_VALUE;
      s.cudaEventSyncId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
      return make(s, end, true);
    }
  }
  return Record{};
}

size_t record_size(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return sizeof(CUpti_ActivityExternalCorrelation);
    default:
      return 0;
  }
}

CUptiResult next_record(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  if (!buffer || !record) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t offset = 0;
  if (*record) {
    const auto* current = reinterpret_cast<const uint8_t*>(*record);
    if (current < buffer || current >= buffer + valid) return CUPTI_ERROR_INVALID_PARAMETER;
    const size_t n = record_size((*record)->kind);
    if (n == 0) return CUPTI_ERROR_INVALID_KIND;
    offset = aligned(size_t(current - buffer) + n);
  }
  if (offset >= valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  const size_t n = record_size(next->kind);
  if (n == 0 || offset + n > valid) return CUPTI_ERROR_INVALID_KIND;  // torn or foreign bytes
  *record = next;
  return CUPTI_SUCCESS;
}

}  // namespace replay_cupti
