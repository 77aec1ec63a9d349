#include "collect/thread_table.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace ptprof::launcher {
namespace {

std::string slot_name(const wire::ThreadSlot& slot) {
  return std::string(slot.name, strnlen(slot.name, sizeof slot.name));
}

}  // namespace

void ThreadTable::attach_new() {
  const uint32_t n = std::min(header_.thread_count.load(std::memory_order_acquire), header_.max_threads);
  while (slots_.size() < n) {
    ThreadDecode t;
    t.slot = uint32_t(slots_.size());
    slots_.push_back(std::move(t));
  }
  // Slots fill in any order (a slot whose ring could not be reserved stays
  // free), and a released slot fills again with a new thread.
  for (auto& t : slots_) {
    if (t.live) continue;
    const wire::ThreadSlot& slot = header_.threads[t.slot];
    // Retired too: a short-lived thread may have come and gone between two
    // rounds. Either way it is a new thread: the old one's slot was Free.
    const auto state = wire::SlotState(slot.state.load(std::memory_order_acquire));
    if (state != wire::SlotState::Ready && state != wire::SlotState::Retired) continue;
    if (t.reader.valid()) replaced_corrupt_bytes_ += t.reader.corrupt_bytes();
    t.reader = wire::RingReader(wire::ring_control(base_, header_, t.slot), wire::ring_data(base_, header_, t.slot),
                                wire::slot_ring_bytes(header_, slot));
    t.live = true;
    t.instance = uint32_t(instances_.size());
    instances_.push_back(ThreadInstance{t.slot, true, slot.tid, {}, {}});
    tid_instances_[slot.tid] = t.instance;
  }
}

void ThreadTable::retire(ThreadDecode& t) {
  PTPROF_DCHECK(t.live && t.spans.empty());
  ThreadInstance& in = instances_[t.instance];
  const wire::ThreadSlot& slot = header_.threads[t.slot];
  in.tid = slot.tid;
  in.name = slot_name(slot);
  in.live = false;
  in.stacks = {};  // nothing of the thread is left to write
  const uint64_t d = t.reader.dropped();
  if (d > t.dropped_accounted) {
    retired_drops_.push_back({t.instance, d - t.dropped_accounted});
    t.dropped_accounted = d;
  }
  t.live = false;
  header_.threads[t.slot].state.store(uint32_t(wire::SlotState::Free), std::memory_order_release);
}

uint32_t ThreadTable::instance_of_tid(int32_t tid, uint32_t fallback) const {
  if (tid == 0) return fallback;
  auto it = tid_instances_.find(tid);
  return it == tid_instances_.end() ? fallback : it->second;
}

trace::Thread ThreadTable::describe(uint32_t instance) const {
  const ThreadInstance& in = instances_[instance];
  trace::Thread th;
  th.process = 0;
  th.tid = in.tid;
  th.name = in.live ? slot_name(header_.threads[in.slot]) : in.name;
  return th;
}

void ThreadTable::define_stack(uint32_t instance, uint32_t id, std::vector<trace::Frame> frames) {
  PTPROF_DCHECK(id > 0);
  auto& stacks = instances_[instance].stacks;
  if (stacks.size() < id) stacks.resize(id);
  stacks[id - 1] = std::move(frames);
}

const std::vector<trace::Frame>* ThreadTable::stack(uint32_t instance, uint32_t id) const {
  const auto& stacks = instances_[instance].stacks;
  if (id > stacks.size() || stacks[id - 1].empty()) return nullptr;
  return &stacks[id - 1];
}

uint64_t ThreadTable::dropped() const {
  uint64_t d = 0;
  for (const auto& t : slots_)
    if (t.reader.valid()) d += t.reader.dropped();
  return d;
}

uint64_t ThreadTable::corrupt_bytes() const {
  uint64_t bytes = replaced_corrupt_bytes_;
  for (const auto& t : slots_) bytes += t.reader.corrupt_bytes();
  return bytes;
}

uint64_t ThreadTable::last_ticks() const {
  uint64_t last = 0;
  for (const auto& t : slots_) last = std::max(last, t.last_ticks);
  return last;
}

bool ThreadTable::drops_to_charge() const {
  if (!retired_drops_.empty()) return true;
  return std::any_of(slots_.begin(), slots_.end(),
                     [](const ThreadDecode& t) { return t.live && t.reader.dropped() > t.dropped_accounted; });
}

std::vector<ThreadDrops> ThreadTable::take_drops() {
  for (auto& t : slots_) {
    if (!t.live) continue;
    const uint64_t d = t.reader.dropped();
    if (d > t.dropped_accounted) {
      retired_drops_.push_back({t.instance, d - t.dropped_accounted});
      t.dropped_accounted = d;
    }
  }
  return std::exchange(retired_drops_, {});
}

}  // namespace ptprof::launcher
