#include "collect/call_fold.hpp"

#include <algorithm>
#include <tuple>
#include <unordered_map>

namespace ptprof::launcher {

namespace {

using trace::EventKind;

// The hooked record's facts, with what only CUPTI knows, on CUPTI's event.
CallRecord folded(const CallRecord& hooked, const CallRecord& cupti) {
  CallRecord out;
  out.event = cupti.event;
  out.event.kind = EventKind::CudaApi;  // what the report, memory and OOM views read a call's facts from
  out.event.name = hooked.event.name;   // the entry point the hook wraps: certain, where CUPTI's is looked up
  out.event.thread = hooked.event.thread;
  // CUPTI's times, the ones torch.profiler shows, where they lie inside the
  // hook's, as on hardware: the call then nests under the same op either
  // way. Else the hook's: they are the thread's own clock, as its ops' are
  // (a replay's CUPTI times calls at their plan times, before the replay
  // made them; a poor clock fit shifts them), and a call must not move out
  // of the op that made it.
  trace::CudaInfo& info = out.info;
  const trace::CudaInfo& c = cupti.info;
  info = hooked.info;
  if (cupti.event.start_ns < hooked.event.start_ns || cupti.event.end_ns > hooked.event.end_ns) {
    out.event.start_ns = hooked.event.start_ns;
    out.event.end_ns = hooked.event.end_ns;
    info.cupti_start_ns = cupti.event.start_ns;
    info.cupti_end_ns = cupti.event.end_ns;
  }
  info.correlation_id = c.correlation_id;
  info.cbid = c.cbid;
  info.family = c.family;
  if (c.external_id) info.external_id = c.external_id;
  if (!info.stream) info.stream = c.stream;
  if (!info.bytes) info.bytes = c.bytes;
  if (!info.ptr) info.ptr = c.ptr;
  if (!info.copy_kind) info.copy_kind = c.copy_kind;
  if (info.device < 0) info.device = c.device;
  if (!info.context) info.context = c.context;
  if (std::all_of(std::begin(info.grid), std::end(info.grid), [](uint32_t v) { return v == 0; })) {
    std::copy(std::begin(c.grid), std::end(c.grid), info.grid);
    std::copy(std::begin(c.block), std::end(c.block), info.block);
  }
  return out;
}

// The pairing of one thread's hooked calls (`hooks`) with its CUPTI records
// (`cuptis`), both indices into `calls` sorted by start. By correlation
// first, then in order, then by time; pairs found by time never cross those
// found before: a thread makes one call after another, so the record of its
// i-th call comes after those of the calls before it.
class ThreadPairing {
 public:
  ThreadPairing(const std::vector<CallRecord>& calls, const std::vector<size_t>& hooks,
                const std::vector<size_t>& cuptis)
      : calls_(calls), hooks_(hooks), cuptis_(cuptis), pos_(hooks.size(), -1), taken_(cuptis.size(), false) {}

  // [i]: the index into `calls` of hooks[i]'s CUPTI record, or -1.
  std::vector<int64_t> pair(int64_t slack) {
    by_correlation();
    in_order();
    by_time(slack, true);  // as on hardware: CUPTI times the call inside the hook
    by_time(slack, false);
    std::vector<int64_t> out(hooks_.size(), -1);
    for (size_t i = 0; i < hooks_.size(); ++i)
      if (pos_[i] >= 0) out[i] = int64_t(cuptis_[size_t(pos_[i])]);
    return out;
  }

 private:
  const CallRecord& hook(size_t i) const { return calls_[hooks_[i]]; }
  const CallRecord& cupti(size_t j) const { return calls_[cuptis_[j]]; }
  void take(size_t i, size_t j) {
    pos_[i] = int64_t(j);
    taken_[j] = true;
  }

  void by_correlation() {
    std::unordered_map<uint64_t, size_t> positions;  // correlation -> position in cuptis
    for (size_t j = 0; j < cuptis_.size(); ++j)
      if (const uint64_t id = cupti(j).info.correlation_id) positions.emplace(id, j);
    for (size_t i = 0; i < hooks_.size(); ++i) {
      if (!hook(i).info.correlation_id) continue;
      auto it = positions.find(hook(i).info.correlation_id);
      if (it != positions.end() && !taken_[it->second]) take(i, it->second);
    }
  }

  // Each call has both records or neither, as a rule: then the n-th hooked
  // call of a name is the n-th CUPTI record of it, however far apart their
  // times (a replay's CUPTI times a call at its plan time, the replay makes
  // it late by whatever the machine's load costs). Paired so where a name
  // has as many records of each kind and no CUPTI record begins after its
  // hooked call ended (as no call's can, but an n-th record that is another
  // call's, one having lost its partner, may).
  void in_order() {
    std::unordered_map<uint32_t, std::pair<std::vector<size_t>, std::vector<size_t>>> by_name;  // positions
    for (size_t i = 0; i < hooks_.size(); ++i)
      if (pos_[i] < 0) by_name[hook(i).event.name].first.push_back(i);
    for (size_t j = 0; j < cuptis_.size(); ++j) {
      if (taken_[j]) continue;
      auto it = by_name.find(cupti(j).event.name);
      if (it != by_name.end()) it->second.second.push_back(j);
    }
    for (const auto& [name, lists] : by_name) {
      const auto& [hs, cs] = lists;
      if (hs.size() != cs.size()) continue;
      bool fits = true;
      for (size_t k = 0; k < hs.size() && fits; ++k)
        fits = cupti(cs[k]).event.start_ns <= hook(hs[k]).event.end_ns + kCallFoldClockErrorNs;
      if (!fits) continue;
      for (size_t k = 0; k < hs.size(); ++k) take(hs[k], cs[k]);
    }
  }

  // Each hooked call left takes a CUPTI record within `slack` of it (only
  // one overlapping it where `overlapping`), between the records of the
  // paired calls around it: of the same name first (a replay's CUPTI times a
  // call at its plan time, so its records may overlap a neighbour's; where
  // CUPTI's names are wrong, none agrees or all do and overlap decides), then
  // overlapping, then of the same family, then the earliest.
  void by_time(int64_t slack, bool overlapping) {
    std::vector<size_t> upper(hooks_.size());  // the record of the next paired call, or the end
    size_t bound = cuptis_.size();
    for (size_t i = hooks_.size(); i-- > 0;) {
      upper[i] = bound;
      if (pos_[i] >= 0) bound = std::min(bound, size_t(pos_[i]));
    }
    size_t lower = 0;  // after the record of the last paired call
    size_t lo = 0;     // before it, every record is taken or ended before this call began (less the slack)
    for (size_t i = 0; i < hooks_.size(); ++i) {
      if (pos_[i] >= 0) {
        lower = std::max(lower, size_t(pos_[i]) + 1);
        continue;
      }
      const CallRecord& h = hook(i);
      while (lo < cuptis_.size() && (taken_[lo] || cupti(lo).event.end_ns + slack < h.event.start_ns)) ++lo;
      int64_t best = -1;
      std::tuple<bool, bool, bool> best_key{};
      for (size_t j = std::max(lo, lower); j < upper[i]; ++j) {
        const CallRecord& c = cupti(j);
        if (c.event.start_ns > h.event.end_ns + slack) break;
        if (taken_[j]) continue;
        const int64_t from = std::max(h.event.start_ns, c.event.start_ns);
        const int64_t to = std::min(h.event.end_ns, c.event.end_ns);
        if (from - to > slack || (overlapping && from > to)) continue;
        const std::tuple<bool, bool, bool> key{c.event.name == h.event.name, from <= to,
                                               c.info.family == h.info.family};
        if (best < 0 || key > best_key) {
          best = int64_t(j);
          best_key = key;
        }
      }
      if (best >= 0) {
        take(i, size_t(best));
        lower = size_t(best) + 1;
      }
    }
  }

  const std::vector<CallRecord>& calls_;
  const std::vector<size_t>& hooks_;
  const std::vector<size_t>& cuptis_;
  std::vector<int64_t> pos_;  // [i]: the position in cuptis_ of hooks_[i]'s record, or -1
  std::vector<bool> taken_;
};

std::vector<int64_t> pair_thread(const std::vector<CallRecord>& calls, const std::vector<size_t>& hooks,
                                 const std::vector<size_t>& cuptis, int64_t slack) {
  return ThreadPairing(calls, hooks, cuptis).pair(slack);
}

}  // namespace

std::vector<CallRecord> fold_calls(std::vector<CallRecord> calls, int64_t slack_ns) {
  std::unordered_map<uint32_t, std::pair<std::vector<size_t>, std::vector<size_t>>> by_thread;  // hooks, cuptis
  std::vector<size_t> threadless;  // CUPTI's records of a thread not found
  for (size_t i = 0; i < calls.size(); ++i) {
    const EventKind k = calls[i].event.kind;
    if (k == EventKind::CudaApi) by_thread[calls[i].event.thread].first.push_back(i);
    if (k == EventKind::CuptiApi && calls[i].thread_known) by_thread[calls[i].event.thread].second.push_back(i);
    if (k == EventKind::CuptiApi && !calls[i].thread_known) threadless.push_back(i);
  }
  const auto by_start = [&](size_t a, size_t b) {
    return calls[a].event.start_ns != calls[b].event.start_ns ? calls[a].event.start_ns < calls[b].event.start_ns
                                                              : a < b;
  };
  std::vector<bool> gone(calls.size(), false);
  std::vector<std::pair<size_t, size_t>> pairs;  // (hooked, cupti)
  std::vector<size_t> unpaired;                  // hooked calls no record of their thread took
  for (auto& [thread, lists] : by_thread) {
    auto& [hooks, cuptis] = lists;
    std::sort(hooks.begin(), hooks.end(), by_start);
    std::sort(cuptis.begin(), cuptis.end(), by_start);
    const std::vector<int64_t> pair = pair_thread(calls, hooks, cuptis, slack_ns);
    for (size_t i = 0; i < hooks.size(); ++i) {
      if (pair[i] >= 0)
        pairs.emplace_back(hooks[i], size_t(pair[i]));
      else
        unpaired.push_back(hooks[i]);
    }
  }
  // Then the records whose thread is not known, with the hooked calls of
  // every thread left, in time order as one thread's would be.
  if (!threadless.empty() && !unpaired.empty()) {
    std::sort(unpaired.begin(), unpaired.end(), by_start);
    std::sort(threadless.begin(), threadless.end(), by_start);
    const std::vector<int64_t> pair = pair_thread(calls, unpaired, threadless, slack_ns);
    for (size_t i = 0; i < unpaired.size(); ++i)
      if (pair[i] >= 0) pairs.emplace_back(unpaired[i], size_t(pair[i]));
  }
  for (const auto& [hooked, cupti] : pairs) {
    calls[cupti] = folded(calls[hooked], calls[cupti]);
    gone[hooked] = true;
  }
  std::vector<CallRecord> out;
  out.reserve(calls.size() - pairs.size());
  for (size_t i = 0; i < calls.size(); ++i)
    if (!gone[i]) out.push_back(calls[i]);
  return out;
}

}  // namespace ptprof::launcher
