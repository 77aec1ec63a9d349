#include "replay_cupti_delivery.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

namespace replay_cupti {

namespace {

constexpr auto kPeriod = std::chrono::milliseconds(10);

// The process's one Delivery, for the exit handler (it is never destroyed:
// the client may flush from its own exit handlers, after ours).
Delivery* g_delivery = nullptr;

void stop_at_exit() {
  if (g_delivery) g_delivery->stop_worker(/*exiting=*/true);
}

}  // namespace

Delivery::Delivery(Options options, Now now, Admit admit)
    : options_(options), now_(now), admit_(std::move(admit)), to_drop_(options.drop_work) {}

void Delivery::set_callbacks(CUpti_BuffersCallbackRequestFunc request, CUpti_BuffersCallbackCompleteFunc complete) {
  std::lock_guard lock(mu_);
  request_ = request;
  complete_ = complete;
}

bool Delivery::has_callbacks() const {
  std::lock_guard lock(mu_);
  return request_ && complete_;
}

void Delivery::queue(std::vector<Record> records) {
  std::lock_guard lock(mu_);
  for (Record& r : records) {
    r.seq = seq_++;
    queued_.emplace(std::make_pair(r.due, r.seq), r);
  }
}

void Delivery::add_unlaunched(std::vector<std::pair<uint64_t, Record>> work) {
  std::stable_sort(work.begin(), work.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::lock_guard lock(mu_);
  unlaunched_ = std::move(work);
  next_unlaunched_ = 0;
}

void Delivery::admit_started(uint64_t now) {
  // Work that has not started yet is not in flight: a forced flush leaves it too.
  while (next_unlaunched_ < unlaunched_.size() && unlaunched_[next_unlaunched_].first <= now) {
    Record r = unlaunched_[next_unlaunched_++].second;
    if (!admit_(r)) continue;  // its kind was not enabled when it ran: CUPTI never saw it
    r.seq = seq_++;
    queued_.emplace(std::make_pair(r.due, r.seq), r);
  }
}

void Delivery::deliver(bool forced, bool worker) {
  std::lock_guard one_at_a_time(deliver_mu_);
  std::vector<Record> batch;
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  size_t left = 0;
  {
    std::lock_guard lock(mu_);
    if (!request_ || !complete_) return;
    request = request_;
    complete = complete_;
    const uint64_t now = now_();
    admit_started(now);
    auto end = forced ? queued_.end() : queued_.upper_bound({now, UINT64_MAX});
    for (auto it = queued_.begin(); it != end; ++it) batch.push_back(it->second);
    queued_.erase(queued_.begin(), end);
    left = queued_.size();
  }
  if (batch.empty()) return;
  if (options_.log)
    std::fprintf(stderr, "ptprof replay CUPTI: %s: %zu records, due %llu..%llu, %zu still queued\n",
                 worker   ? "worker"
                 : forced ? "forced flush"
                          : "flush",
                 batch.size(), (unsigned long long)batch.front().due, (unsigned long long)batch.back().due, left);
  if (options_.reverse) std::reverse(batch.begin(), batch.end());
  account_order(batch, worker ? "worker" : forced ? "forced flush" : "flush");
  size_t i = 0;
  while (i < batch.size()) {
    uint8_t* buffer = nullptr;
    size_t size = 0, max_records = 0;
    request(&buffer, &size, &max_records);
    if (!buffer || size < batch[i].size) {
      // No room given: CUPTI drops what it cannot write, and counts it.
      dropped_ += batch.size() - i;
      break;
    }
    size_t at = 0, valid = 0, n = 0;
    for (; i < batch.size() && at + batch[i].size <= size && (max_records == 0 || n < max_records); ++i) {
      const Record& r = batch[i];
      if (r.work && to_drop_ > 0) {
        --to_drop_;
        ++dropped_;
        continue;
      }
      std::memcpy(buffer + at, r.bytes, r.size);
      valid = at + r.size;
      at = aligned(valid);
      ++n;
    }
    complete(nullptr, 0, buffer, size, valid);
  }
}

void Delivery::account_order(std::vector<Record>& batch, const char* who) const {
  // Where each correlation's first external record is, and whether work of
  // it came before.
  std::unordered_map<uint32_t, size_t> first_external;
  for (size_t i = 0; i < batch.size(); ++i)
    if (batch[i].kind() == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) first_external.emplace(batch[i].correlation, i);
  if (first_external.empty()) return;
  std::unordered_set<uint32_t> with_early_work;
  size_t early = 0, early_kernels = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!batch[i].work || batch[i].correlation == 0) continue;
    auto it = first_external.find(batch[i].correlation);
    if (it == first_external.end() || it->second < i) continue;
    ++early;
    const CUpti_ActivityKind kind = batch[i].kind();
    early_kernels += kind == CUPTI_ACTIVITY_KIND_KERNEL || kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    with_early_work.insert(batch[i].correlation);
  }
  if (early == 0) return;
  size_t left_out = 0;
  if (options_.drop_late_correlations)
    left_out = size_t(std::erase_if(batch, [&](const Record& r) {
      return r.kind() == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION && with_early_work.count(r.correlation);
    }));
  if (options_.log)
    std::fprintf(stderr,
                 "ptprof replay CUPTI: %s: out of order: %zu work records (%zu kernels) before their correlation "
                 "record; %zu correlation records left out\n",
                 who, early, early_kernels, left_out);
}

void* Delivery::worker_main(void* self) {
  auto* d = static_cast<Delivery*>(self);
  std::unique_lock lock(d->worker_mu_);
  while (!d->stop_) {
    d->wake_.wait_for(lock, kPeriod, [d] { return d->stop_; });
    if (d->stop_) break;
    lock.unlock();
    d->deliver(false, /*worker=*/true);
    lock.lock();
  }
  return nullptr;
}

void Delivery::start_worker() {
  std::lock_guard lifecycle(lifecycle_mu_);
  if (running_ || exiting_) return;
  {
    std::lock_guard lock(worker_mu_);
    stop_ = false;
  }
  if (pthread_create(&worker_, nullptr, worker_main, this) != 0) return;  // flushes still deliver
  pthread_setname_np(worker_, "replay-cupti");
  running_ = true;
  if (!at_exit_registered_) {
    at_exit_registered_ = true;
    g_delivery = this;
    std::atexit(stop_at_exit);
  }
}

void Delivery::stop_worker(bool exiting) {
  std::lock_guard lifecycle(lifecycle_mu_);
  exiting_ |= exiting;  // at exit: no worker again, whatever the client does in its own exit handlers
  if (!running_) return;
  running_ = false;
  {
    std::lock_guard lock(worker_mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (pthread_equal(worker_, pthread_self()))
    pthread_detach(worker_);  // the client unsubscribed from inside a buffer callback
  else
    pthread_join(worker_, nullptr);
}

void Delivery::forget_worker() {
  running_ = false;
  stop_ = false;
}

}  // namespace replay_cupti
