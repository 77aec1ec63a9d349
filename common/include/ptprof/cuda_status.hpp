// Whether a process's CUDA activity is recorded, and if not, why: the agent
// publishes it in its process region (ProcessHeader::cuda_status) for the
// run's summary, and writes the same sentence as a Mark named with
// kCudaNotePrefix into each window it records, so that `report` can say it;
// with kCudaDevicePrefix it marks each GPU's properties (below).
#pragma once
#include <cstdint>
#include <string_view>

#include "ptprof/trace.hpp"

namespace ptprof::wire {

enum class CudaStatus : uint8_t {
  None = 0,         // no CUDA library in the process: nothing to say
  Recording = 1,    // CUPTI is enabled while windows record
  NoDriver = 2,     // libcuda.so.1 cannot be loaded
  NoCupti = 3,      // no libcupti found
  CuptiTaken = 4,   // another tool holds CUPTI (torch.profiler, nsys): ptprof yields
  NoGpu = 5,        // the driver is there but CUPTI finds no device
  CuptiFailed = 6,  // any other CUPTI error
  NotBuilt = 7,     // this agent was built without CUPTI's headers
};

// ProcessHeader::cuda_status packs the status, whether ptprof has yielded
// CUPTI to another tool in some window (sticky: the status itself may be
// Recording again by the time the launcher looks) and the string-arena id of
// the status's one-line explanation, so that all change in one store.
constexpr uint32_t kCudaYielded = 0x80u;
constexpr uint32_t pack_cuda_status(CudaStatus s, bool yielded, uint32_t message_id) {
  return message_id << 8 | (yielded ? kCudaYielded : 0u) | uint32_t(s);
}
constexpr CudaStatus cuda_status_code(uint32_t packed) { return CudaStatus(packed & 0x7fu); }
constexpr bool cuda_status_yielded(uint32_t packed) { return (packed & kCudaYielded) != 0; }
constexpr uint32_t cuda_status_message(uint32_t packed) { return packed >> 8; }

// Marks whose name starts with this are the agent's notes on CUDA, not the
// program's: the report prints them as lines, not as operator rows.
constexpr std::string_view kCudaNotePrefix = "ptprof: CUDA ";
// Whether `e` is such a note: reports print it as a line (device marks
// aside, below), exports leave it out.
inline bool is_cuda_note(const trace::Trace& t, const trace::Event& e) {
  return e.kind == trace::EventKind::Mark && e.name < t.strings.size() &&
         t.strings[e.name].starts_with(kCudaNotePrefix);
}

// A note that is data, not a sentence: one GPU's properties, which the agent
// asks of the driver once per process and marks in each window that records
// GPU work, one mark per device, named this prefix and Kineto's
// deviceProperties entry for the device as compact JSON, "id" first:
//   ptprof: CUDA device {"id":0,"name":"NVIDIA A100-SXM4-80GB",...}
// The trace reader keeps them as Trace::gpu_devices; reports print none.
constexpr std::string_view kCudaDevicePrefix = "ptprof: CUDA device ";
static_assert(kCudaDevicePrefix.starts_with(kCudaNotePrefix), "a device mark is a CUDA note (never the program's)");

// The device id of a device mark's name, or -1 when `name` is not one.
inline int32_t cuda_device_mark_id(std::string_view name) {
  constexpr std::string_view kHead = "{\"id\":";
  if (!name.starts_with(kCudaDevicePrefix)) return -1;
  name.remove_prefix(kCudaDevicePrefix.size());
  if (!name.starts_with(kHead)) return -1;
  int64_t id = 0;
  size_t i = kHead.size(), digits = 0;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && digits < 9; ++i, ++digits)
    id = id * 10 + (name[i] - '0');
  if (digits == 0 || i >= name.size() || (name[i] != ',' && name[i] != '}')) return -1;
  return int32_t(id);
}
inline bool is_cuda_device_mark(const trace::Trace& t, const trace::Event& e) {
  return e.kind == trace::EventKind::Mark && e.name < t.strings.size() && cuda_device_mark_id(t.strings[e.name]) >= 0;
}

// What the launcher says of a process that yielded CUPTI in some window.
constexpr std::string_view kCudaYieldedNote =
    "ptprof: CUDA not recorded in some windows: CUPTI was held by another tool (torch.profiler, nsys) and ptprof "
    "yielded; the report of each such window says so";

}  // namespace ptprof::wire
