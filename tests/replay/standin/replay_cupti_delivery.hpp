// How the stand-in hands its records to the client, as CUPTI does: in
// buffers the client's buffer-requested callback gives, completed through
// its buffer-completed callback, on the stand-in's own worker thread (about
// every 10 ms) or synchronously in cuptiActivityFlushAll. A delivery holds
// only records whose due time has passed on the CUPTI clock (a forced flush:
// every queued record), sorted by that time, so that the records of several
// streams interleave within a buffer. In that order a call's external
// correlation (due at the call's start) always precedes its work (due at the
// work's end); a delivery that breaks it says how often (the log).
#pragma once
#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "replay_cupti_records.hpp"

namespace replay_cupti {

class Delivery {
 public:
  struct Options {
    bool reverse = false;    // $PTPROF_REPLAY_BUFFER_ORDER=reverse: each delivery's records in reverse order
    uint64_t drop_work = 0;  // $PTPROF_REPLAY_DROPPED=N: the first N GPU work records are dropped (and reported)
    bool log = false;        // $PTPROF_REPLAY_CUPTI_LOG=1: one line on stderr per delivery
    // $PTPROF_REPLAY_LATE_CORRELATIONS=drop: an external correlation record
    // that comes after work of its correlation in a delivery is left out:
    // what a client that joins each record only with the correlations
    // before it (one that assumes CUPTI's order) makes of the delivery.
    bool drop_late_correlations = false;
  };
  // The CUPTI clock, and whether a record may be recorded now (its kind
  // enabled; it may also change a kernel record's kind to the one enabled).
  using Now = uint64_t (*)();
  using Admit = std::function<bool(Record&)>;

  Delivery(Options options, Now now, Admit admit);

  void set_callbacks(CUpti_BuffersCallbackRequestFunc request, CUpti_BuffersCallbackCompleteFunc complete);
  bool has_callbacks() const;

  // Records recorded now, delivered once due.
  void queue(std::vector<Record> records);
  // GPU work that no call launches: recorded when `start` passes (if
  // admitted then), delivered once due. Sorted by start here.
  void add_unlaunched(std::vector<std::pair<uint64_t, Record>> work);

  // Hands over the due records (forced: all queued, and the unlaunched work
  // that has started), synchronously, on the calling thread.
  // `worker`: the worker thread's periodic delivery (for the log).
  void deliver(bool forced, bool worker = false);

  // The worker thread: started once the client subscribes or enables a
  // kind; stopped and joined at unsubscribe and at exit.
  void start_worker();
  void stop_worker(bool exiting = false);
  // In a fork child: the parent's worker does not exist there.
  void forget_worker();

  // cuptiActivityGetNumDroppedRecords: the records dropped since the last call.
  size_t take_dropped() { return dropped_.exchange(0); }

 private:
  // Counts (for the log) the work records of `batch` that come before their
  // correlation, and leaves the late correlations out when told to.
  void account_order(std::vector<Record>& batch, const char* who) const;
  static void* worker_main(void* self);
  void admit_started(uint64_t now);  // under mu_

  const Options options_;
  const Now now_;
  const Admit admit_;

  std::mutex deliver_mu_;  // one delivery at a time: a flush returns after every buffer it owes is completed
  mutable std::mutex mu_;  // the queue and the callbacks
  CUpti_BuffersCallbackRequestFunc request_ = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete_ = nullptr;
  std::map<std::pair<uint64_t, uint64_t>, Record> queued_;  // by (due, seq)
  uint64_t seq_ = 0;
  std::vector<std::pair<uint64_t, Record>> unlaunched_;  // by start
  size_t next_unlaunched_ = 0;
  uint64_t to_drop_ = 0;
  std::atomic<size_t> dropped_{0};

  std::mutex lifecycle_mu_;  // start and stop, whole (a join is not done under worker_mu_)
  bool running_ = false;
  bool exiting_ = false;
  bool at_exit_registered_ = false;
  pthread_t worker_{};
  std::mutex worker_mu_;  // what the worker waits on
  std::condition_variable wake_;
  bool stop_ = false;
};

}  // namespace replay_cupti
