#include "export/launch_links.hpp"

namespace ptprof::exporting::detail {

bool is_gpu_work(trace::EventKind kind) {
  using trace::EventKind;
  return kind == EventKind::Kernel || kind == EventKind::Memcpy || kind == EventKind::Memset ||
         kind == EventKind::GpuSync;
}

bool is_cuda_call(trace::EventKind kind) {
  return kind == trace::EventKind::CudaApi || kind == trace::EventKind::CuptiApi;
}

const trace::CudaInfo* cuda_info(const trace::Trace& t, const trace::Event& e) {
  if (!is_gpu_work(e.kind) && !is_cuda_call(e.kind) && e.kind != trace::EventKind::GpuOverhead) return nullptr;
  return e.arg >= 1 && e.arg <= t.cuda.size() ? &t.cuda[e.arg - 1] : nullptr;
}

LaunchLinks::Key LaunchLinks::key(const trace::Trace& t, const trace::Event& e, uint64_t id) {
  int32_t pid = 0;
  if (e.thread < t.threads.size()) {
    const uint32_t process = t.threads[e.thread].process;
    if (process < t.processes.size()) pid = t.processes[process].pid;
  }
  return {pid, id};
}

void LaunchLinks::see(const trace::Trace& t, const trace::Event& e, uint64_t export_id) {
  if (e.kind == trace::EventKind::Op) {
    if (e.arg != 0) ops_.emplace(key(t, e, e.arg), export_id);
    return;
  }
  const trace::CudaInfo* c = cuda_info(t, e);
  if (!c || c->correlation_id == 0) return;
  const Key k = key(t, e, c->correlation_id);
  if (!only_pid_) only_pid_ = k.pid;
  many_pids_ = many_pids_ || *only_pid_ != k.pid;
  if (is_cuda_call(e.kind)) launches_.emplace(k, export_id);
  if (is_gpu_work(e.kind)) work_.emplace(k, export_id);
}

std::optional<uint64_t> LaunchLinks::launching_op(const trace::Trace& t, const trace::Event& e) const {
  const trace::CudaInfo* c = cuda_info(t, e);
  if (!c || c->external_id == 0) return std::nullopt;
  auto it = ops_.find(key(t, e, c->external_id));
  if (it == ops_.end()) return std::nullopt;
  return it->second;
}

std::optional<uint64_t> LaunchLinks::flow(const trace::Trace& t, const trace::Event& e, uint64_t export_id) const {
  const trace::CudaInfo* c = cuda_info(t, e);
  if (!c || c->correlation_id == 0) return std::nullopt;
  const Key k = key(t, e, c->correlation_id);
  bool linked = false;
  if (is_cuda_call(e.kind)) {
    auto first = launches_.find(k);
    linked = first != launches_.end() && first->second == export_id && work_.contains(k);
  } else if (is_gpu_work(e.kind)) {
    auto first = work_.find(k);
    linked = first != work_.end() && first->second == export_id && launches_.contains(k);
  }
  if (!linked) return std::nullopt;
  // Kineto's id is the correlation id; of several processes, each its own.
  return many_pids_ ? uint64_t(uint32_t(k.pid)) << 32 | (k.id & 0xffffffffu) : k.id;
}

}  // namespace ptprof::exporting::detail
