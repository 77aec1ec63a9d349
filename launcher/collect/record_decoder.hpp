// The first stage of the collector: one ring record, as the agent wrote it,
// becomes one typed event, validated against wire::kRecordTypes. Every copy
// of a wire payload into a launcher or trace struct happens here, so the
// stages after it never see a raw payload (and never trust one: a record too
// short for its payload is Malformed, a type of a later version Skipped).
#pragma once
#include <cstdint>
#include <span>
#include <variant>
#include <vector>

#include "ptprof/record.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::launcher::decoded {

struct Skipped {};  // Pad, ThreadName, a type or kind of a later version
struct Malformed {
  uint32_t bytes = 0;  // what the ring loses by it (the ledger's malformed_bytes)
};
struct RangePush {};
struct RangePop {};
struct Mark {};
struct Step {
  uint64_t number = 0;  // the step that begins at the record's time
};
struct OpBegin {
  uint64_t handle = 0;
  int64_t seq_nr = -1;
  uint64_t fwd_thread_id = 0;
  uint8_t scope = 0;   // wire::OpScope
  uint16_t flags = 0;  // trace::EventFlags
  uint32_t stack = 0;  // the thread's stack id, 0 = none
  bool has_shapes = false;
  std::span<const uint8_t> shapes;  // shapes.hpp encoding, inside the ring: valid while the record is
};
struct OpEnd {
  uint64_t handle = 0;
};
// A hooked CUDA call; info.kernel_name is still an arena id.
struct CudaApiCall {
  uint64_t end_ts = 0;  // raw ticks, never before the call's start
  trace::CudaInfo info;
};
// A CUPTI activity record; info.kernel_name (kernels) is still an arena id.
struct GpuActivity {
  uint64_t end_ts = 0;  // raw ticks, never before the record's start
  trace::EventKind kind = trace::EventKind::Kernel;
  const char* unnamed = "";  // the event's name when the agent could not intern one
  bool on_lane = true;       // on its (device, stream) lane, else on a CPU thread
  int32_t tid = 0;           // CUPTI API records: the thread that made the call
  trace::CudaInfo info;
};
struct Correlation {
  uint64_t correlation_id = 0;
  uint64_t external_id = 0;  // the launching op's handle
};
// An allocation or free; `info` holds what the agent measured (no names yet).
struct Memory {
  wire::MemorySource source = wire::MemorySource::Torch;
  trace::MemoryInfo info;
};
// A stack of the thread; frames name arena ids.
struct StackDef {
  uint32_t id = 0;  // 1-based, per thread
  std::vector<trace::Frame> frames;
};

using Payload = std::variant<Skipped, Malformed, RangePush, RangePop, Mark, Step, OpBegin, OpEnd, CudaApiCall,
                             GpuActivity, Correlation, Memory, StackDef>;

struct Record {
  uint64_t ts = 0;    // raw ticks
  uint32_t name = 0;  // arena id of the record's name, for types whose arg is one (0: none or lost)
  Payload payload;
};

}  // namespace ptprof::launcher::decoded

namespace ptprof::launcher {

// `h` lies in a ring, followed by its payload (h.size bytes in all).
decoded::Record decode_record(const wire::RecordHeader& h);

}  // namespace ptprof::launcher
