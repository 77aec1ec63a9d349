// The args of CUDA events in Kineto's schema, as torch.profiler's
// export_chrome_trace writes them, which HTA reads (it counts an event as
// GPU work only with a stream, as a kernel only with a correlation):
//   kernel      queued, device, context, stream, correlation, registers per
//               thread, shared memory, blocks per SM, warps per SM, grid,
//               block, est. achieved occupancy % (the occupancy args where
//               the kernel's device was described: kernel_occupancy.hpp)
//   gpu_memcpy, gpu_memset   device, context, stream, correlation, bytes,
//               memory bandwidth (GB/s)
//   cuda_sync   cuda_sync_kind, device, context, stream, correlation
//   cuda_runtime, cuda_driver   cbid (CUPTI's record of the call), correlation
//               (the category is the call's API family, as Kineto's)
// and the "ac2g" flow from a launch to its work. A context CUPTI did not
// name (0) is left out; "queued" is 0 where CUPTI did not time the queueing,
// as in Kineto's files.
#include "export/chrome_event_format.hpp"

#include <algorithm>
#include <iterator>

#include "export/device_properties.hpp"

namespace ptprof::exporting::detail {

namespace {

void put_dim3(std::string& out, std::string_view key, const uint32_t (&d)[3]) {
  out += ",\"";
  out += key;
  out += "\":[";
  for (int i = 0; i < 3; ++i) {
    if (i) out += ',';
    char buf[16];
    auto r = std::to_chars(buf, buf + sizeof buf, d[i]);
    out.append(buf, r.ptr);
  }
  out += ']';
}

}  // namespace

void ChromeEventFormatter::append_cuda_args(std::string& out, const trace::Trace& t, const trace::Event& e) {
  const trace::CudaInfo* c = cuda_info(t, e);
  if (!c) return;
  if (is_cuda_call(e.kind)) {
    if (c->cbid) append_number_arg(out, "cbid", c->cbid);
    if (c->correlation_id) append_number_arg(out, "correlation", c->correlation_id);
    return;
  }
  if (!is_gpu_work(e.kind)) return;
  if (e.kind == trace::EventKind::GpuSync) {
    out += ",\"cuda_sync_kind\":";
    out += name_json(t, e.name < t.strings.size() ? e.name : 0);
  }
  const bool kernel = e.kind == trace::EventKind::Kernel;
  if (kernel) append_number_arg(out, "queued", c->queued_ns ? c->queued_ns + realtime_offset_ns_ : 0);
  if (c->device >= 0) append_number_arg(out, "device", c->device);
  if (c->context) append_number_arg(out, "context", c->context);
  append_number_arg(out, "stream", c->stream);
  if (c->correlation_id) append_number_arg(out, "correlation", c->correlation_id);
  if (kernel) {
    append_number_arg(out, "registers per thread", c->registers);
    append_number_arg(out, "shared memory", uint64_t(c->static_shared) + c->dynamic_shared);
    append_occupancy(out, *c);
  } else if (e.kind == trace::EventKind::Memcpy || e.kind == trace::EventKind::Memset) {
    append_number_arg(out, "bytes", c->bytes);
    // Kineto's: bytes per ns of the copy, which is GB/s.
    if (const int64_t ns = trace::duration_ns(e); ns > 0)
      append_number_arg(out, "memory bandwidth (GB/s)", double(c->bytes) / double(ns));
  }
}

void ChromeEventFormatter::set_devices(const std::vector<trace::GpuDevice>& devices) {
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

// In Kineto's order around grid and block. Without the device's properties
// (a file of an older ptprof, a device no agent described) or a launch's
// shape, nothing is estimated.
void ChromeEventFormatter::append_occupancy(std::string& out, const trace::CudaInfo& c) {
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
    out += ",\"blocks per SM\":";
    append_float(out, o->blocks_per_sm);
    out += ",\"warps per SM\":";
    append_float(out, o->warps_per_sm);
  }
  put_dim3(out, "grid", c.grid);
  put_dim3(out, "block", c.block);
  if (o && o->achieved_percent) append_number_arg(out, "est. achieved occupancy %", *o->achieved_percent);
}

void ChromeEventFormatter::append_launch_flow(std::string& out, const trace::Trace& t, const trace::Event& e,
                                              uint64_t export_id) {
  if (!links_) return;
  const std::optional<uint64_t> id = links_->flow(t, e, export_id);
  if (!id) return;
  // Kineto binds the end to the enclosing slice ("bp":"e"), the work itself.
  out += ",\n";
  append_flow(out, t, e, is_cuda_call(e.kind), *id, "ac2g");
}

}  // namespace ptprof::exporting::detail
