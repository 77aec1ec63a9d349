// The agent's CUPTI consumer: decides whether CUDA activity can be
// recorded, holds CUPTI only while a window records, and turns CUPTI's
// completed buffers into ring records (cupti_activity.hpp).
//
// Contract with the launcher (the conversion of GpuActivity and
// ExternalCorrelation records into trace events):
// - Records are written into the ring of whichever thread CUPTI hands the
//   buffer to (its worker thread, or the thread that flushes), not the
//   thread that launched the work. GpuActivity ts/end_ts are raw ticks of
//   the session clock, converted from CUPTI's clock; records within one ring
//   are NOT in time order (GPU work completes later than it is launched).
// - From the first window CUPTI collects in, ProcessHeader::gpu_flush is
//   raised and the launcher holds each ended window until its GpuFlushed
//   boundary. At a
//   window's end (WindowListener::window_ended, outside the step lock, and
//   at exit) the device is synchronized (as torch.profiler does before it
//   stops), CUPTI is force-flushed, CUPTI is let go if recording stopped,
//   and then GpuFlushed is published: kernels still queued when the step's
//   CPU side ended land in their window, not late.
// - Completed buffers are also handed over at each step end (not forced):
//   a window's records then reach the rings step by step, where the
//   launcher drains them, rather than all at once into the ring of the
//   thread that ends the window (which a long window could overflow).
// - ExternalCorrelation: correlation_id -> external_id, where external_id is
//   the OpBeginPayload::handle of the innermost op on the launching thread
//   (pushed at op begin, popped at op end, only for ops whose begin was
//   recorded). Its ts is the time it was converted (inside the window).
// - GraphNode (cupti_graphs.hpp): while CUPTI is held, each CUDA graph node
//   made or copied, on the thread that made it, with the handle of the op
//   open there (the innermost op this thread recorded; 0 = none). Nodes made
//   while CUPTI is not held are never reported: their replays are "captured
//   outside the window".
// - ProcessHeader::cuda_status (cuda_status.hpp) says whether CUDA is
//   recorded and why not; each recording window where it is not gets a Mark
//   named "ptprof: CUDA ..." with the reason.
// - Device marks (cuda_status.hpp, kCudaDevicePrefix): in each window CUPTI
//   collects in, one Mark per GPU with its properties, from the driver
//   (cuda_devices.hpp), asked once per process: at the window's start, or
//   at a later step end of it when the program had not yet called cuInit.
//   A driver that cannot say (no device queries, an error) gets none.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "ptprof/clock.hpp"
#include "ptprof/cuda_status.hpp"
#include "window/window_listener.hpp"

namespace ptprof::agent {

class WindowController;

class CuptiConsumer final : public WindowListener {
 public:
  CuptiConsumer();
  ~CuptiConsumer();
  CuptiConsumer(const CuptiConsumer&) = delete;
  CuptiConsumer& operator=(const CuptiConsumer&) = delete;

  // Where the CUDA status goes: published for the launcher, the reason's
  // text interned; returns the text's string id (0: refused).
  using StatusSink = uint32_t (*)(wire::CudaStatus status, bool yielded, const char* message);
  // Before the first check_for_cuda: the windows this consumer flushes for
  // (the GPU flush protocol, gpu_flushed), where its status goes, and the
  // session's clock that GPU times are converted to.
  void configure(WindowController& windows, StatusSink status, clock::Kind clock);

  // The process may have loaded CUDA (start, and after each dlopen). The
  // first call that finds a CUDA library decides whether CUPTI can be used;
  // later calls cost one atomic load.
  void check_for_cuda(bool recording);
  // The window listener (window/window_listener.hpp). Recording began or ended;
  // called under the step lock.
  void recording_changed(bool on) override;
  // A step is ending: while collecting, CUPTI's completed buffers are
  // handed over now (the window's end waits for the rest).
  void step_ending() override;
  // Window `window` ended: synchronizes the device, force-flushes CUPTI,
  // lets it go unless recording goes on, publishes GpuFlushed. Called
  // without the step lock held (WindowController::notify_window_end).
  void window_ended(uint32_t window) override;
  // Hands CUPTI's completed buffers over now.
  void flush();
  void shutdown();
  // A fork child does not inherit ptprof's CUPTI session.
  void forget_after_fork();

  // Op correlation: on while CUPTI records. push/pop wrap
  // cuptiActivityPush/PopExternalCorrelationId.
  bool correlating() const { return correlating_.load(std::memory_order_acquire); }
  void push(uint64_t handle);
  void pop();

  // A completed CUPTI buffer: converted into the calling thread's ring.
  // `context` (a CUcontext) and `stream`: the buffer's, as CUPTI completed
  // it (for the records CUPTI says it dropped there).
  void convert(uint8_t* buffer, size_t valid_bytes, void* context = nullptr, uint32_t stream = 0);
  // CUPTI's callback (a CUDA graph node made or copied), on the thread
  // that made it; `data` is the callback's CUpti_ResourceData.
  void resource_callback(uint32_t cbid, const void* data);

  // The CUPTI library, the clock mapping, kernel names (empty without
  // CUPTI's headers).
  struct Impl;

 private:
  void decide(bool recording);
  void enable_locked();
  void enable_graph_callbacks();              // under mu_, CUPTI just subscribed
  void disable_locked(bool flushed = false);  // flushed: CUPTI was just force-flushed
  void set_status(wire::CudaStatus s, const char* message);
  void note_in_window();
  void note_devices_locked();  // under mu_: this window's device marks, once

  WindowController* windows_ = nullptr;
  StatusSink status_sink_ = nullptr;
  clock::Kind clock_ = clock::Kind::Monotonic;
  std::atomic<bool> checked_{false};
  std::atomic<bool> correlating_{false};
  std::mutex mu_;
  bool usable_ = false;  // CUPTI loaded and worth trying
  bool enabled_ = false;
  bool recording_ = false;
  bool flush_protocol_ = false;  // ProcessHeader::gpu_flush raised (at the first enable)
  bool yielded_ = false;         // CUPTI was left to another tool in some window
  bool devices_noted_ = false;   // this window has its device marks (or the driver cannot say)
  wire::CudaStatus status_ = wire::CudaStatus::None;
  uint32_t message_id_ = 0;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ptprof::agent
