// One CUDA call, one event. A runtime or driver call can reach the
// launcher twice: as the agent's hooked record (EventKind::CudaApi: the
// result code, the kernel's name, the pointer; no correlation) and as
// CUPTI's API record (EventKind::CuptiApi: the correlation, the cbid and
// the times torch.profiler shows). Where both are there, CUPTI's record is
// the call and the hooked one is folded into it; a call with one record
// keeps it as it is.
//
// The two records of a call are on the same thread (CUPTI's names the
// calling thread) and their times meet: the hook wraps the entry point,
// CUPTI times it inside, so one interval holds the other, up to the clock
// alignment's error. And a thread makes one call after another: where every
// call of a name has both records, the n-th of each is the same call, however
// far apart their times (a replay's CUPTI times calls at their plan times, the
// replay is late by the machine's load). Else time pairs them, without
// crossing the pairs found in order: a name agreeing ranks first among the
// records near enough in time; where CUPTI's names are wrong (looked up by
// callback id, they may be missing), overlap decides.
#pragma once
#include <cstdint>
#include <vector>

#include "ptprof/trace.hpp"

namespace ptprof::launcher {

struct CallRecord {
  trace::Event event;  // name and thread already file ids
  trace::CudaInfo info;
  // CUPTI's records: whether event.thread is the calling thread. CUPTI names
  // it by pthread_self() unless the client asked for system thread ids; a
  // record whose thread was not found pairs with a hooked call of any thread
  // (and is written, folded, on that call's thread).
  bool thread_known = true;
};

// How far apart (ns) the two records of one call may lie and still be
// paired when neither holds the other: the hook's and CUPTI's clocks meet
// only through the alignment, and a replay's CUPTI times the call where its
// plan put it, a little before the replay made it.
inline constexpr int64_t kCallFoldSlackNs = 5'000'000;
// How far CUPTI's record of a call may begin after the hooked call ended:
// CUPTI times the call inside the hook, so only the clock alignment's error.
inline constexpr int64_t kCallFoldClockErrorNs = 50'000;

// The calls of one window, hooked and CUPTI's records mixed (other kinds
// pass through): each hooked record that has CUPTI's record of the same
// call becomes one CudaApi event with CUPTI's correlation and cbid, CUPTI's
// times where they lie inside the hook's (else the hook's, CUPTI's kept in
// CudaInfo::cupti_start_ns/cupti_end_ns), and the hook's name and facts; the
// others are unchanged. Per thread, each record paired at most once: by equal
// correlation; then in order, per name, where both kinds have as many records
// and none of CUPTI's begins after its hooked call ended (beyond the clock
// error); then, between the pairs found so far, a hooked record takes one of
// CUPTI's overlapping it, else within the slack: of the same name, then
// overlapping, then of the same family, then the earliest.
std::vector<CallRecord> fold_calls(std::vector<CallRecord> calls, int64_t slack_ns = kCallFoldSlackNs);

}  // namespace ptprof::launcher
