// The args torch.profiler gives a CUDA call or GPU work, under Kineto's names
// and in Kineto's order, as one list of names and typed values that each
// export renders in its own format: the Chrome export as JSON args
// (chrome_gpu_event.cpp), the Perfetto export as debug annotations
// (export_perfetto.cpp). Listing them once keeps the two exports alike.
//   kernel      queued, device, context, stream, correlation, registers per
//               thread, shared memory, blocks per SM, warps per SM, grid,
//               block, est. achieved occupancy % (the occupancy args where
//               the kernel's device was described: kernel_occupancy.hpp)
//   gpu_memcpy, gpu_memset   device, context, stream, correlation, bytes,
//               memory bandwidth (GB/s)
//   cuda_sync   cuda_sync_kind, device, context, stream, correlation
//   cuda_runtime, cuda_driver   cbid (CUPTI's record of the call), correlation
// A context CUPTI did not name (0) is left out; "queued" is 0 where CUPTI did
// not time the queueing, as in Kineto's files.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>
#include <vector>

#include "export/kernel_occupancy.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::exporting::detail {

// A float arg (Kineto computes the occupancy args in float): written as the
// shortest text that reads back as the same float (append_float).
struct FloatArg {
  float value = 0;
};
using Dim3Arg = std::array<uint32_t, 3>;  // a launch's grid or block: Kineto's [x, y, z]
// A text arg's view points into the trace's strings.
using ArgValue = std::variant<int64_t, uint64_t, double, FloatArg, std::string_view, Dim3Arg>;

struct EventArg {
  std::string_view name;  // a literal: Kineto's arg name
  ArgValue value;
};

class GpuEventArgs {
 public:
  // The GPUs of the inputs (InputSummary::gpu_devices): kernels on one of
  // them get Kineto's occupancy args.
  void set_devices(const std::vector<trace::GpuDevice>& devices);

  // Replaces `args` with the args of CUDA event `e` (none for other events),
  // times on the wall clock of a file whose realtime offset is `realtime_offset_ns`.
  void list(const trace::Trace& t, const trace::Event& e, int64_t realtime_offset_ns,
            std::vector<EventArg>& args) const;

 private:
  // Kineto's blocks per SM, warps per SM, grid, block and est. achieved
  // occupancy % of a kernel, in Kineto's order.
  void list_occupancy(const trace::CudaInfo& c, std::vector<EventArg>& args) const;

  std::vector<std::optional<OccupancyDevice>> device_limits_;  // by device id
};

}  // namespace ptprof::exporting::detail
