#include "cupti/cupti_activity.hpp"

#include <cupti_driver_cbid.h>

#include <cctype>
#include <cstdio>
#include <cstring>

#include "ptprof/record_emit.hpp"

namespace ptprof::agent::cupti {

namespace {

uint32_t name_id(const ActivityOutput& out, const char* name) {
  return name && *name && out.intern ? out.intern(out.intern_ctx, name) : 0;
}

// A name in a buffer of this file's (on the stack): interned by its text,
// never by its pointer.
uint32_t transient_name_id(const ActivityOutput& out, const char* name) {
  auto* intern = out.intern_transient ? out.intern_transient : out.intern;
  return name && *name && intern ? intern(out.intern_ctx, name) : 0;
}

// CUPTI names API functions with their version ("cudaLaunchKernel_v7000",
// "cudaStreamGetCaptureInfo_v2_v11030"); torch.profiler and nsys show them
// without it: only a trailing "_v<digits>" goes.
uint32_t api_name_id(const ActivityOutput& out, CallbackNameFn callback_name, CUpti_CallbackDomain domain,
                     uint32_t cbid) {
  const char* name = nullptr;
  if (!callback_name || callback_name(domain, cbid, &name) != CUPTI_SUCCESS || !name) return 0;
  const size_t length = std::strlen(name);
  size_t digits = 0;
  while (digits < length && std::isdigit(static_cast<unsigned char>(name[length - 1 - digits]))) ++digits;
  const size_t cut = length - digits;
  if (digits == 0 || cut < 3 || name[cut - 1] != 'v' || name[cut - 2] != '_') return name_id(out, name);
  char buf[256];
  const size_t n = std::min(cut - 2, sizeof buf - 1);
  std::memcpy(buf, name, n);
  buf[n] = '\0';
  return transient_name_id(out, buf);
}

void set_launch(wire::GpuActivityPayload& p, int32_t gx, int32_t gy, int32_t gz, int32_t bx, int32_t by, int32_t bz) {
  p.grid[0] = uint32_t(gx);
  p.grid[1] = uint32_t(gy);
  p.grid[2] = uint32_t(gz);
  p.block[0] = uint32_t(bx);
  p.block[1] = uint32_t(by);
  p.block[2] = uint32_t(bz);
}

struct Converted {
  bool keep = false;
  bool correlation = false;
  bool timed = false;  // CUPTI gave both times
  uint32_t name = 0;
  uint64_t ts = 0;
  wire::GpuActivityPayload gpu{};
  wire::ExternalCorrelationPayload ext{};
};

// What every record of work on a device (kernel, copy, set) carries, under
// the same field names in each record type.
template <class DeviceWork>
void copy_device_work(const DeviceWork& r, wire::GpuActivityPayload& p) {
  p.correlation_id = r.correlationId;
  p.device = r.deviceId;
  p.context = r.contextId;
  p.stream = r.streamId;
  p.graph_node_id = r.graphNodeId;
  p.graph_id = r.graphId;
}

Converted convert(const CUpti_Activity* rec, CallbackNameFn callback_name, const GpuClock& clock,
                  const ActivityOutput& out) {
  Converted c;
  wire::GpuActivityPayload& p = c.gpu;
  auto times = [&](uint64_t start, uint64_t end) {
    c.timed = start != 0 && end >= start;
    c.ts = clock.to_ticks(start);
    p.end_ts = clock.to_ticks(end);
  };
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      // Only fields that every kernel record version since CUDA 11 has at
      // the same offsets (up to graphId) are read.
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
      p.kind = uint8_t(wire::GpuActivityKind::Kernel);
      times(k->start, k->end);
      copy_device_work(*k, p);
      set_launch(p, k->gridX, k->gridY, k->gridZ, k->blockX, k->blockY, k->blockZ);
      p.registers = k->registersPerThread;
      p.static_shared = uint32_t(k->staticSharedMemory);
      p.dynamic_shared = uint32_t(k->dynamicSharedMemory);
      // CUPTI says when a launch was queued only with latency timestamps on.
      if (k->queued != CUPTI_TIMESTAMP_UNKNOWN && k->queued != 0) p.queued_ts = clock.to_ticks(k->queued);
      c.name = name_id(out, k->name);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
      p.kind = uint8_t(wire::GpuActivityKind::Memcpy);
      times(m->start, m->end);
      copy_device_work(*m, p);
      p.bytes = m->bytes;
      p.copy_kind = m->copyKind;
      char name[64];
      memcpy_name(m->copyKind, m->srcKind, m->dstKind, name, sizeof name);
      c.name = transient_name_id(out, name);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
      p.kind = uint8_t(wire::GpuActivityKind::Memset);
      times(m->start, m->end);
      copy_device_work(*m, p);
      p.bytes = m->bytes;
      char name[48];
      memset_name(m->memoryKind, name, sizeof name);
      c.name = transient_name_id(out, name);
      break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(rec);
      p.kind = uint8_t(wire::GpuActivityKind::Sync);
      times(s->start, s->end);
      p.correlation_id = s->correlationId;
      p.context = s->contextId;
      p.stream = s->streamId;
      c.name = name_id(out, sync_name(s->type));
      break;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      const auto* o = reinterpret_cast<const CUpti_ActivityOverhead3*>(rec);
      p.kind = uint8_t(wire::GpuActivityKind::Overhead);
      times(o->start, o->end);
      p.correlation_id = o->correlationId;
      p.copy_kind = overhead_code(o->overheadKind);
      if (o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || o->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
        p.thread = int32_t(o->objectId.pt.threadId);
      } else {
        p.device = o->objectId.dcs.deviceId;
        p.context = o->objectId.dcs.contextId;
        p.stream = o->objectId.dcs.streamId;
      }
      c.name = name_id(out, overhead_name(o->overheadKind));
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(rec);
      const bool runtime = rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
      if (!runtime && agent_device_query(out, a->cbid, a->start, a->end)) return c;
      p.kind = uint8_t(runtime ? wire::GpuActivityKind::RuntimeApi : wire::GpuActivityKind::DriverApi);
      times(a->start, a->end);
      p.correlation_id = a->correlationId;
      p.thread = int32_t(a->threadId);
      p.cbid = a->cbid;
      c.name =
          api_name_id(out, callback_name, runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, a->cbid);
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(rec);
      if (e->externalKind != kExternalKind) return c;  // another tool's ids
      c.correlation = true;
      c.ts = out.now_ticks;
      c.ext.correlation_id = e->correlationId;
      c.ext.external_id = e->externalId;
      break;
    }
    default:
      return c;
  }
  // A forced flush hands over records of work still in flight, without
  // times: they would land anywhere on the timeline.
  c.keep = c.correlation || c.timed;
  return c;
}

}  // namespace

bool agent_device_query(const ActivityOutput& out, uint32_t cbid, uint64_t start, uint64_t end) {
  if (cbid != CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount && cbid != CUPTI_DRIVER_TRACE_CBID_cuDeviceGetName &&
      cbid != CUPTI_DRIVER_TRACE_CBID_cuDeviceTotalMem_v2 && cbid != CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute)
    return false;
  for (size_t i = 0; i < out.agent_call_count; ++i)
    if (start >= out.agent_calls[i].from_ns && end <= out.agent_calls[i].to_ns) return true;
  return false;
}

ActivityCounts convert_buffer(uint8_t* buffer, size_t valid_bytes, NextRecordFn next, CallbackNameFn callback_name,
                              const GpuClock& clock, const ActivityOutput& out) {
  ActivityCounts n;
  if (!buffer || valid_bytes == 0 || !next || !out.ring) return n;
  CUpti_Activity* rec = nullptr;
  while (next(buffer, valid_bytes, &rec) == CUPTI_SUCCESS && rec) {
    ++n.records;
    const Converted c = convert(rec, callback_name, clock, out);
    if (!c.keep) {
      ++n.skipped;
      continue;
    }
    const bool ok = c.correlation ? wire::emit(*out.ring, wire::RecordType::ExternalCorrelation, 0, c.ts, c.ext)
                                  : wire::emit(*out.ring, wire::RecordType::GpuActivity, c.name, c.ts, c.gpu);
    ++(ok ? n.written : n.dropped);
  }
  return n;
}

// Kineto's words (libkineto's cupti_strings.cpp: memcpyKindString,
// memoryKindString), its formats CuptiActivity.h's memcpyName and Memset's name().
const char* memcpy_kind_word(uint8_t copy_kind) {
  switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
      return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
      return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "PtoP";
    default:
      return "<unknown>";
  }
}

const char* memory_kind_word(uint32_t memory_kind) {
  switch (memory_kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN:
      return "Unknown";
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
      return "Pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
      return "Pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
      return "Device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
      return "Array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
      return "Managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
      return "Device Static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
      return "Managed Static";
    case CUPTI_ACTIVITY_MEMORY_KIND_FORCE_INT:
      return "Force Int";
    default:
      return "Unrecognized";
  }
}

void memcpy_name(uint8_t copy_kind, uint8_t src_kind, uint8_t dst_kind, char* buf, size_t size) {
  if (size == 0) return;
  std::snprintf(buf, size, "Memcpy %s (%s -> %s)", memcpy_kind_word(copy_kind), memory_kind_word(src_kind),
                memory_kind_word(dst_kind));
}

void memset_name(uint32_t memory_kind, char* buf, size_t size) {
  if (size == 0) return;
  std::snprintf(buf, size, "Memset (%s)", memory_kind_word(memory_kind));
}

const char* overhead_name(CUpti_ActivityOverheadKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER:
      return "Overhead driver compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH:
      return "Overhead CUPTI buffer flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION:
      return "Overhead CUPTI instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE:
      return "Overhead CUPTI resource";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING:
      return "Overhead module loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING:
      return "Overhead lazy function loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL:
      return "Overhead command buffer full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST:
      return "Overhead activity buffer request";
    default:
      return "Overhead";
  }
}

uint8_t overhead_code(CUpti_ActivityOverheadKind kind) {
  // The driver's kinds are small numbers, CUPTI's are multiples of 1 << 16.
  const uint32_t k = uint32_t(kind);
  return k < 0x10000u ? uint8_t(k) : uint8_t(0x80u | (k >> 16));
}

const char* sync_name(CUpti_ActivitySynchronizationType type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
      return "Event Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
      return "Stream Wait Event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
      return "Stream Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
      return "Context Sync";
    default:
      return "Sync";
  }
}

}  // namespace ptprof::agent::cupti
