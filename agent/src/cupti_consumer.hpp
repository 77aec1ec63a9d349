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
// - Every buffer CUPTI holds is flushed at each step end while CUPTI is on,
//   BEFORE the step's boundary ticks are taken, so the GPU records of a
//   window are in the rings before the window's end is published. GPU work
//   that completes after its window's end arrives later and is a late event.
// - ExternalCorrelation: correlation_id -> external_id, where external_id is
//   the OpBeginPayload::handle of the innermost op on the launching thread
//   (pushed at op begin, popped at op end, only for ops whose begin was
//   recorded). Its ts is the time it was converted (inside the window).
// - ProcessHeader::cuda_status (cuda_status.hpp) says whether CUDA is
//   recorded and why not; each recording window where it is not gets a Mark
//   named "ptprof: CUDA ..." with the reason.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "ptprof/cuda_status.hpp"

namespace ptprof::agent {

class CuptiConsumer {
 public:
  CuptiConsumer();
  ~CuptiConsumer();
  CuptiConsumer(const CuptiConsumer&) = delete;
  CuptiConsumer& operator=(const CuptiConsumer&) = delete;

  // The process may have loaded CUDA (start, and after each dlopen). The
  // first call that finds a CUDA library decides whether CUPTI can be used;
  // later calls cost one atomic load.
  void check_for_cuda(bool recording);
  // Recording began or ended; called under the step lock.
  void recording_changed(bool on);
  // Hands CUPTI's buffers over now (step end, exit).
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
  void convert(uint8_t* buffer, size_t valid_bytes);

  // The CUPTI library, the clock mapping, kernel names (empty without
  // CUPTI's headers).
  struct Impl;

 private:
  void decide(bool recording);
  void enable_locked();
  void disable_locked();
  void set_status(wire::CudaStatus s, const char* message);
  void note_in_window();

  std::atomic<bool> checked_{false};
  std::atomic<bool> correlating_{false};
  std::mutex mu_;
  bool usable_ = false;  // CUPTI loaded and worth trying
  bool enabled_ = false;
  bool recording_ = false;
  bool yielded_ = false;  // CUPTI was left to another tool in some window
  wire::CudaStatus status_ = wire::CudaStatus::None;
  uint32_t message_id_ = 0;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ptprof::agent
