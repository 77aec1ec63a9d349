#include "export/gpu_event_args.hpp"

#include <algorithm>
#include <iterator>

#include "export/device_properties.hpp"
#include "export/launch_links.hpp"

namespace ptprof::exporting::detail {

void GpuEventArgs::set_devices(const std::vector<trace::GpuDevice>& devices) {
  device_limits_.clear();
  constexpr int32_t kMaxDeviceId = 4096;  // ordinals are small; a larger id is no device's
  for (const trace::GpuDevice& d : devices) {
    if (d.id < 0 || d.id >= kMaxDeviceId) continue;
    const std::optional<DeviceProperties> p = read_device_properties(d.properties);
    if (!p || !p->limits) continue;
    if (device_limits_.size() <= size_t(d.id)) device_limits_.resize(size_t(d.id) + 1);
    device_limits_[size_t(d.id)] = p->limits;
  }
}

void GpuEventArgs::list(const trace::Trace& t, const trace::Event& e, int64_t realtime_offset_ns,
                        std::vector<EventArg>& args) const {
  args.clear();
  const trace::CudaInfo* c = cuda_info(t, e);
  if (!c) return;
  if (is_cuda_call(e.kind)) {
    if (c->cbid) args.push_back({"cbid", uint64_t(c->cbid)});
    if (c->correlation_id) args.push_back({"correlation", c->correlation_id});
    return;
  }
  if (!is_gpu_work(e.kind)) return;
  if (e.kind == trace::EventKind::GpuSync)
    args.push_back({"cuda_sync_kind", std::string_view(t.strings[e.name < t.strings.size() ? e.name : 0])});
  const bool kernel = e.kind == trace::EventKind::Kernel;
  if (kernel) args.push_back({"queued", int64_t(c->queued_ns ? c->queued_ns + realtime_offset_ns : 0)});
  if (c->device >= 0) args.push_back({"device", int64_t(c->device)});
  if (c->context) args.push_back({"context", uint64_t(c->context)});
  args.push_back({"stream", c->stream});
  if (c->correlation_id) args.push_back({"correlation", c->correlation_id});
  if (kernel) {
    args.push_back({"registers per thread", uint64_t(c->registers)});
    args.push_back({"shared memory", uint64_t(c->static_shared) + c->dynamic_shared});
    list_occupancy(*c, args);
  } else if (e.kind == trace::EventKind::Memcpy || e.kind == trace::EventKind::Memset) {
    args.push_back({"bytes", c->bytes});
    // Kineto's: bytes per ns of the copy, which is GB/s.
    if (const int64_t ns = trace::duration_ns(e); ns > 0)
      args.push_back({"memory bandwidth (GB/s)", double(c->bytes) / double(ns)});
  }
}

// Without the device's properties (a file of an older ptprof, a device no
// agent described) or a launch's shape, nothing is estimated.
void GpuEventArgs::list_occupancy(const trace::CudaInfo& c, std::vector<EventArg>& args) const {
  const bool described = c.device >= 0 && size_t(c.device) < device_limits_.size() && device_limits_[size_t(c.device)];
  const bool shaped = c.grid[0] && c.grid[1] && c.grid[2] && c.block[0] && c.block[1] && c.block[2];
  std::optional<KernelOccupancy> o;
  if (described && shaped) {
    KernelLaunch k;
    std::copy(std::begin(c.grid), std::end(c.grid), k.grid);
    std::copy(std::begin(c.block), std::end(c.block), k.block);
    k.registers = c.registers;
    k.shared_memory = uint64_t(c.static_shared) + c.dynamic_shared;
    o = kernel_occupancy(*device_limits_[size_t(c.device)], k);
    args.push_back({"blocks per SM", FloatArg{o->blocks_per_sm}});
    args.push_back({"warps per SM", FloatArg{o->warps_per_sm}});
  }
  args.push_back({"grid", Dim3Arg{c.grid[0], c.grid[1], c.grid[2]}});
  args.push_back({"block", Dim3Arg{c.block[0], c.block[1], c.block[2]}});
  if (o && o->achieved_percent) args.push_back({"est. achieved occupancy %", int64_t(*o->achieved_percent)});
}

}  // namespace ptprof::exporting::detail
