#include "collect/cuda_join.hpp"

#include "ptprof/cuda_status.hpp"

namespace ptprof::launcher {

void CudaJoin::api_call(const decoded::Record& r, const decoded::CudaApiCall& call, uint32_t instance, int32_t slot,
                        WindowTrace& trace) {
  trace::Event e;
  e.kind = trace::EventKind::CudaApi;
  e.start_ns = process_.conv.to_ns(r.ts);
  e.end_ns = process_.conv.to_ns(call.end_ts);
  e.name = trace.event_name(r.name);
  e.thread = trace.thread(instance);
  if (flushes_gpu()) {
    calls_[slot].push_back({e, call.info});  // CUPTI's record of it may follow
    return;
  }
  join(slot, trace, e, call.info);
}

void CudaJoin::gpu_activity(const decoded::Record& r, const decoded::GpuActivity& a, uint32_t instance, int32_t slot,
                            WindowTrace& trace) {
  trace::Event e;
  e.kind = a.kind;
  e.start_ns = process_.conv.to_ns(r.ts);
  e.end_ns = process_.conv.to_ns(a.end_ts);
  e.name = r.name == 0 ? trace.text(a.unnamed) : trace.name(r.name);
  trace::CudaInfo info = a.info;
  if (a.queued_ts) info.queued_ns = process_.conv.to_ns(a.queued_ts);
  if (a.on_lane) {
    e.thread = trace.lane(uint32_t(a.info.device), uint32_t(a.info.stream));
  } else {
    // CUPTI's record of an API call names the thread that made it; an
    // overhead record stays on the thread that drained CUPTI.
    const bool api = a.kind == trace::EventKind::CuptiApi;
    const uint32_t caller = api ? process_.threads.instance_of_tid(a.tid, UINT32_MAX) : instance;
    e.thread = trace.thread(caller == UINT32_MAX ? instance : caller);
    if (api && flushes_gpu()) {
      // The hooked record of the call may follow.
      calls_[slot].push_back({e, info, caller != UINT32_MAX});
      return;
    }
  }
  join(slot, trace, e, info);
}

void CudaJoin::graph_node(const decoded::GraphNode& g, uint32_t op_name) {
  if (g.original_id)
    graphs_.cloned(g.node_id, g.original_id);
  else
    graphs_.created(g.node_id, {g.op, op_name});
}

bool CudaJoin::attribute(trace::CudaInfo& info) const {
  if (info.graph_node_id != 0) {
    // A replay: the cudaGraphLaunch's correlation names the op that
    // replayed the graph; the work belongs to the op that captured it.
    if (const GraphCaptures::Capture* c = graphs_.find(info.graph_node_id)) {
      info.external_id = c->op;
      info.graph_capture = trace::GraphCapture::Recorded;
      info.capture_op = c->op_name;
      return true;
    }
    info.external_id = 0;
    info.graph_capture = trace::GraphCapture::Outside;
    return false;
  }
  if (info.correlation_id == 0) return true;
  auto it = external_.find(info.correlation_id);
  if (it == external_.end()) return false;
  info.external_id = it->second;
  return true;
}

void CudaJoin::join(int32_t slot, WindowTrace& trace, const trace::Event& e, trace::CudaInfo info) {
  if (!attribute(info) && flushes_gpu()) {
    // The capture of a graph node is written on the capturing thread's
    // ring, which may be drained after the ring of the replay's kernels in
    // the same pass: settled at the pass's end. A correlation may come
    // later still (CUPTI's buffers): held until the window is written.
    if (info.graph_node_id)
      unsettled_.push_back({slot, {e, info}});
    else
      held_[slot].push_back({e, info});
    return;
  }
  write(trace, e, info);
}

void CudaJoin::release(int32_t slot, WindowTrace& trace) {
  // Folded when the window is written, not as records arrive: CUPTI hands
  // over its buffers late and in any order, and a call pairs with the
  // earliest fitting record only once all of its thread's are in.
  if (auto calls = calls_.find(slot); calls != calls_.end()) {
    for (CallRecord& c : fold_calls(std::move(calls->second))) {
      (void)attribute(c.info);
      write(trace, c.event, c.info);
    }
    calls_.erase(calls);
  }
  std::erase_if(unsettled_, [&](std::pair<int32_t, Held>& u) {
    if (u.first != slot) return false;
    (void)attribute(u.second.info);
    write(trace, u.second.event, u.second.info);
    return true;
  });
  auto held = held_.find(slot);
  if (held == held_.end()) return;
  for (Held& h : held->second) {
    (void)attribute(h.info);  // what is still unknown stays so
    write(trace, h.event, h.info);
  }
  held_.erase(held);
}

void CudaJoin::write(WindowTrace& trace, trace::Event e, trace::CudaInfo info) {
  info.kernel_name = info.kernel_name ? trace.name(info.kernel_name) : 0;
  info.capture_op = info.capture_op ? trace.name(info.capture_op) : 0;
  e.arg = uint64_t(trace.writer().add_cuda(info)) + 1;
  trace.add(e);
}

std::vector<std::string> cuda_notes(const wire::ProcessHeader& header, ProcessNames& names) {
  const uint32_t packed = header.cuda_status.load(std::memory_order_acquire);
  const wire::CudaStatus code = wire::cuda_status_code(packed);
  std::vector<std::string> notes;
  if (code == wire::CudaStatus::None) return notes;
  const uint32_t id = wire::cuda_status_message(packed);
  names.learn(id);
  notes.push_back(id && names.known(id) ? names.text(id) : "ptprof: CUDA status " + std::to_string(uint32_t(code)));
  if (wire::cuda_status_yielded(packed) && code != wire::CudaStatus::CuptiTaken)
    notes.emplace_back(wire::kCudaYieldedNote);
  return notes;
}

}  // namespace ptprof::launcher
