// CUPTI activity records, in the CUDA 13 layouts of the toolkit's
// cupti_activity.h, made from the plan's calls and work, and the iteration
// over a buffer of them (cuptiActivityGetNextRecord).
#pragma once
#include <cupti.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "replay_cupti_plan.hpp"

namespace replay_cupti {

constexpr size_t kMaxRecordBytes = std::max({sizeof(CUpti_ActivityKernel10), sizeof(CUpti_ActivityMemcpy6),
                                             sizeof(CUpti_ActivityMemset4), sizeof(CUpti_ActivitySynchronization2),
                                             sizeof(CUpti_ActivityAPI), sizeof(CUpti_ActivityExternalCorrelation)});

// Records are 8-aligned in a buffer, as CUPTI's are.
constexpr size_t aligned(size_t n) { return (n + 7) & ~size_t(7); }

// One record waiting for delivery: due when the CUPTI clock passes `due`
// (the end of the work or call; an external correlation: its call's start).
struct Record {
  uint64_t due = 0;
  uint64_t seq = 0;          // queue order: ties of `due` stay in it
  bool work = false;         // a kernel, copy, set or sync (what $PTPROF_REPLAY_DROPPED drops)
  uint32_t correlation = 0;  // the correlationId in its bytes (an external correlation's: the call's)
  uint32_t size = 0;
  alignas(8) unsigned char bytes[kMaxRecordBytes];

  CUpti_ActivityKind kind() const { return reinterpret_cast<const CUpti_Activity*>(bytes)->kind; }
};

// Plan time t -> the CUPTI clock: begin + t.
inline uint64_t at(uint64_t begin, int64_t t) { return begin + uint64_t(t); }

Record api_record(const PlanCall& c, uint64_t begin, uint32_t pid, uint32_t tid);
Record external_record(CUpti_ExternalCorrelationKind kind, uint64_t external_id, uint32_t correlation, uint64_t due);
// `kernel_kind`: CONCURRENT_KERNEL or KERNEL (whichever the client enabled).
// `async`: the launching call was an ...Async one (the copy's/set's flag).
Record work_record(const PlanWork& w, uint64_t begin, CUpti_ActivityKind kernel_kind, bool async, int64_t grid_id);

// The bytes of a record of `kind` in a buffer (0: not a kind this stand-in writes).
size_t record_size(CUpti_ActivityKind kind);
CUptiResult next_record(uint8_t* buffer, size_t valid, CUpti_Activity** record);

}  // namespace replay_cupti
