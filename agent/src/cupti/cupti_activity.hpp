// CUPTI activity buffers -> ring records: the one path every completed
// buffer takes, whether CUPTI hands it over (cupti_consumer.cpp) or a test
// does. Pure: no CUPTI library, no runtime; the caller passes the record
// iterator (cuptiActivityGetNextRecord or a test's), the clock mapping and
// where the records go.
//
// What is written (record.hpp):
//   kernel, memcpy, memset, synchronization, overhead, runtime and driver
//   API records -> GpuActivity (ts/end_ts on the session clock; arg = name
//   id: the kernel's name, the API function's name, Kineto's "Memcpy HtoD
//   (Pageable -> Device)" for copies and "Memset (Device)" for sets, the
//   synchronization type or the overhead kind);
//   EXTERNAL_CORRELATION records of ptprof's own kind -> ExternalCorrelation
//   (ts = `now_ticks`: CUPTI gives them no time). Records of other external
//   kinds (torch.profiler's own), the agent's own questions to the driver
//   (AgentCallSpan) and other activity kinds are skipped.
#pragma once
#include <cupti_activity.h>

#include <cstddef>
#include <cstdint>

#include "ptprof/record.hpp"
#include "ptprof/ring.hpp"

namespace ptprof::agent::cupti {

// The external correlation kind ptprof pushes op handles under. Kineto uses
// CUSTOM0 (ops) and CUSTOM1 (user annotations); ptprof keeps a stack of its
// own so that the two never pop each other's ids.
constexpr CUpti_ExternalCorrelationKind kExternalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;

// CUPTI's nanoseconds -> the session clock's raw ticks:
// ticks = anchor_ticks + (ns - anchor_ns) * ticks_per_ns.
struct GpuClock {
  uint64_t anchor_ns = 0;
  uint64_t anchor_ticks = 0;
  double ticks_per_ns = 1.0;

  uint64_t to_ticks(uint64_t ns) const {
    const double d = double(int64_t(ns - anchor_ns)) * ticks_per_ns;
    return anchor_ticks + uint64_t(int64_t(d));
  }
};

using NextRecordFn = CUptiResult (*)(uint8_t* buffer, size_t valid_bytes, CUpti_Activity** record);
using CallbackNameFn = CUptiResult (*)(CUpti_CallbackDomain domain, uint32_t cbid, const char** name);

// When the agent asked the driver about its devices while CUPTI recorded
// driver calls (cuda_devices.hpp), in CUPTI's ns: the driver API records of
// those questions (cuDeviceGetCount, cuDeviceGetName, cuDeviceTotalMem_v2,
// cuDeviceGetAttribute) within such a span are the agent's, not the
// program's, and are skipped.
struct AgentCallSpan {
  uint64_t from_ns = 0;
  uint64_t to_ns = 0;
};

struct ActivityOutput {
  wire::RingWriter* ring = nullptr;
  // Interns a name CUPTI keeps for the process (a kernel's): the consumer
  // may know it again by its pointer. 0: the name was refused.
  uint32_t (*intern)(void* ctx, const char* name) = nullptr;
  void* intern_ctx = nullptr;
  uint64_t now_ticks = 0;  // the time given to records CUPTI does not time
  const AgentCallSpan* agent_calls = nullptr;
  size_t agent_call_count = 0;
  // Interns a name in a buffer of the caller's, gone after the call (an API
  // name without its version): never known by its pointer. Null: `intern`.
  uint32_t (*intern_transient)(void* ctx, const char* name) = nullptr;
};

// Whether driver API record `cbid` from `start` to `end` (CUPTI ns) is one of
// the agent's device questions (AgentCallSpan).
bool agent_device_query(const ActivityOutput& out, uint32_t cbid, uint64_t start, uint64_t end);

struct ActivityCounts {
  uint64_t records = 0;  // records in the buffer
  uint64_t written = 0;  // records written to the ring
  uint64_t dropped = 0;  // refused by the full ring (the ring counts them too)
  uint64_t skipped = 0;  // kinds ptprof does not keep, other tools' correlations
};

// Converts every record of `buffer` (valid_bytes long) and writes it to
// out.ring. `callback_name` may be null (API records are then unnamed).
ActivityCounts convert_buffer(uint8_t* buffer, size_t valid_bytes, NextRecordFn next, CallbackNameFn callback_name,
                              const GpuClock& clock, const ActivityOutput& out);

// The names copies and sets are reported under, written into `buf` (always
// terminated, cut to `size`): Kineto's, so that torch.profiler's tables, HTA
// and ptprof's rows agree. A copy by its CUpti_ActivityMemcpyKind and the
// CUpti_ActivityMemoryKind of each side ("Memcpy HtoD (Pageable -> Device)"),
// a set by the kind of memory it set ("Memset (Device)").
void memcpy_name(uint8_t copy_kind, uint8_t src_kind, uint8_t dst_kind, char* buf, size_t size);
void memset_name(uint32_t memory_kind, char* buf, size_t size);
// Kineto's words for a copy's direction ("HtoD", "<unknown>") and a memory's
// kind ("Pageable", "Device Static", "Unrecognized").
const char* memcpy_kind_word(uint8_t copy_kind);
const char* memory_kind_word(uint32_t memory_kind);
// Short names of overhead kinds and synchronization types.
const char* overhead_name(CUpti_ActivityOverheadKind kind);
const char* sync_name(CUpti_ActivitySynchronizationType type);
// CUpti_ActivityOverheadKind folded into GpuActivityPayload::copy_kind's byte.
uint8_t overhead_code(CUpti_ActivityOverheadKind kind);

}  // namespace ptprof::agent::cupti
