// One CUDA call, one event (launcher/collect/call_fold.hpp): a hooked call
// and CUPTI's record of it fold into one event with the facts of both; a
// call with one record keeps it; calls pair by thread, then in order per
// name (however late the hook), else by name and time (overlap deciding where
// CUPTI's names are wrong). And the CUDA stage (cuda_join.hpp) folds a
// window's calls when it writes the window.
#include <catch2/catch.hpp>

#include <algorithm>

#include "collect/call_fold.hpp"
#include "collect/cuda_join.hpp"
#include "collector_fixtures.hpp"
#include "ptprof/record.hpp"

using ptprof::launcher::CallRecord;
using ptprof::launcher::CudaJoin;
using ptprof::launcher::fold_calls;
using ptprof::testing::StageFixture;
using ptprof::trace::EventKind;
namespace decoded = ptprof::launcher::decoded;
namespace trace = ptprof::trace;
namespace wire = ptprof::wire;

namespace {

constexpr uint32_t kLaunch = 1, kGetDevice = 2, kWrongName = 3, kDriverLaunch = 4;  // name ids
constexpr uint8_t kRuntime = uint8_t(wire::CudaApiFamily::Runtime), kDriver = uint8_t(wire::CudaApiFamily::Driver);

CallRecord hooked(int64_t start, int64_t end, uint32_t name = kLaunch, uint32_t thread = 0) {
  CallRecord c;
  c.event.kind = EventKind::CudaApi;
  c.event.start_ns = start;
  c.event.end_ns = end;
  c.event.name = name;
  c.event.thread = thread;
  c.info.family = kRuntime;
  c.info.result = 2;  // what only the hook knows
  c.info.kernel_name = 77;
  c.info.bytes = 4096;
  return c;
}

CallRecord cupti(int64_t start, int64_t end, uint64_t correlation, uint32_t name = kLaunch, uint32_t thread = 0,
                 uint8_t family = kRuntime) {
  CallRecord c;
  c.event.kind = EventKind::CuptiApi;
  c.event.start_ns = start;
  c.event.end_ns = end;
  c.event.name = name;
  c.event.thread = thread;
  c.info.correlation_id = correlation;
  c.info.cbid = 211;
  c.info.family = family;
  return c;
}

const CallRecord* with_correlation(const std::vector<CallRecord>& calls, uint64_t correlation) {
  auto it = std::find_if(calls.begin(), calls.end(),
                         [&](const CallRecord& c) { return c.info.correlation_id == correlation; });
  return it == calls.end() ? nullptr : &*it;
}

}  // namespace

TEST_CASE("call fold: a call with both records is one event with the facts of both", "[collector][cuda][fold]") {
  const auto out = fold_calls({hooked(100, 200), cupti(110, 190, 55, kLaunch)});
  REQUIRE(out.size() == 1);
  const CallRecord& c = out[0];
  CHECK(c.event.kind == EventKind::CudaApi);
  CHECK(c.event.start_ns == 110);  // CUPTI's times: the ones torch.profiler shows
  CHECK(c.event.end_ns == 190);
  CHECK(c.event.name == kLaunch);
  CHECK(c.info.correlation_id == 55);
  CHECK(c.info.cbid == 211);
  CHECK(c.info.result == 2);  // the hook's facts kept
  CHECK(c.info.kernel_name == 77);
  CHECK(c.info.bytes == 4096);
}

TEST_CASE("call fold: a call only hooked, or only CUPTI's, stays as it is", "[collector][cuda][fold]") {
  SECTION("only hooked") {
    const auto out = fold_calls({hooked(100, 200)});
    REQUIRE(out.size() == 1);
    CHECK(out[0].event.kind == EventKind::CudaApi);
    CHECK(out[0].event.start_ns == 100);
    CHECK(out[0].info.correlation_id == 0);
    CHECK(out[0].info.result == 2);
  }
  SECTION("only CUPTI's") {
    const auto out = fold_calls({cupti(100, 200, 9, kGetDevice)});
    REQUIRE(out.size() == 1);
    CHECK(out[0].event.kind == EventKind::CuptiApi);
    CHECK(out[0].event.name == kGetDevice);
    CHECK(out[0].info.correlation_id == 9);
  }
  SECTION("on another thread: no pair") {
    const auto out = fold_calls({hooked(100, 200, kLaunch, 0), cupti(110, 190, 9, kLaunch, 1)});
    CHECK(out.size() == 2);
  }
}

TEST_CASE("call fold: two calls of one name back to back on one thread: each folds with its own",
          "[collector][cuda][fold]") {
  // Given in the order the rings may hand them over: CUPTI's later call first.
  const auto out = fold_calls({cupti(320, 380, 8), hooked(100, 200), cupti(110, 190, 7), hooked(300, 400)});
  REQUIRE(out.size() == 2);
  const CallRecord* first = with_correlation(out, 7);
  const CallRecord* second = with_correlation(out, 8);
  REQUIRE(first);
  REQUIRE(second);
  CHECK(first->event.kind == EventKind::CudaApi);
  CHECK(first->event.start_ns == 110);
  CHECK(second->event.kind == EventKind::CudaApi);
  CHECK(second->event.start_ns == 320);
}

TEST_CASE("call fold: a thread's n-th hooked call of a name is its n-th CUPTI record, however late the hook",
          "[collector][cuda][fold]") {
  // A replay on a loaded machine: every hook 5 calls later than CUPTI's plan
  // time, far beyond the slack; each hook overlaps a later call's record.
  std::vector<CallRecord> calls;
  for (int64_t k = 0; k < 20; ++k) {
    calls.push_back(cupti(1000 * k, 1000 * k + 100, uint64_t(k + 1)));
    calls.push_back(hooked(1000 * k + 5000, 1000 * k + 5100));
  }
  const auto out = fold_calls(calls, 100);
  REQUIRE(out.size() == 20);
  for (int64_t k = 0; k < 20; ++k) {
    const CallRecord* c = with_correlation(out, uint64_t(k + 1));
    REQUIRE(c);
    CHECK(c->event.kind == EventKind::CudaApi);
    CHECK(c->event.start_ns == 1000 * k + 5000);  // the hook's times (CUPTI's lie outside them)
    CHECK(c->info.cupti_start_ns == 1000 * k);
  }
  SECTION("a record lost (counts differ): time pairs the rest, as on hardware") {
    const auto lost =
        fold_calls({hooked(100, 200), cupti(110, 190, 1), hooked(300, 400), hooked(500, 600), cupti(510, 590, 3)});
    REQUIRE(lost.size() == 3);
    CHECK(with_correlation(lost, 1)->event.start_ns == 110);
    CHECK(with_correlation(lost, 3)->event.start_ns == 510);
  }
  SECTION("as many records as hooks, but one lost at each end: a CUPTI record after its hook's end, so by time") {
    constexpr int64_t kUs = 1000;  // apart by more than the clock alignment's error
    const auto shifted = fold_calls({hooked(100 * kUs, 200 * kUs), hooked(300 * kUs, 400 * kUs),
                                     cupti(310 * kUs, 390 * kUs, 2), cupti(500 * kUs, 590 * kUs, 3)});
    REQUIRE(shifted.size() == 3);
    CHECK(with_correlation(shifted, 2)->event.kind == EventKind::CudaApi);
    CHECK(with_correlation(shifted, 2)->event.start_ns == 310 * kUs);
    CHECK(with_correlation(shifted, 3)->event.kind == EventKind::CuptiApi);
  }
}

TEST_CASE("call fold: time and thread pair the records, not CUPTI's names", "[collector][cuda][fold]") {
  SECTION("a CUPTI name that is wrong: the record inside the hook's interval is the call's") {
    // cudaGetDevice just before the launch, both CUPTI records misnamed.
    const auto out = fold_calls({cupti(80, 95, 6, kWrongName), hooked(100, 200), cupti(110, 190, 7, kWrongName)});
    REQUIRE(out.size() == 2);
    const CallRecord* launch = with_correlation(out, 7);
    REQUIRE(launch);
    CHECK(launch->event.kind == EventKind::CudaApi);
    CHECK(launch->event.name == kLaunch);  // the hook's name: the entry point it wraps
    CHECK(with_correlation(out, 6)->event.kind == EventKind::CuptiApi);
  }
  SECTION("the driver call CUPTI saw inside the runtime call stays a call of its own") {
    const auto out = fold_calls(
        {hooked(100, 200), cupti(130, 170, 8, kWrongName, 0, kDriver), cupti(110, 190, 7, kWrongName, 0, kRuntime)});
    REQUIRE(out.size() == 2);
    CHECK(with_correlation(out, 7)->event.kind == EventKind::CudaApi);
    CHECK(with_correlation(out, 8)->event.kind == EventKind::CuptiApi);
  }
  SECTION("records that do not meet (a replay's CUPTI times the call at its plan time): names and order pair them") {
    // Each hook 50 ns after its CUPTI record ended, later than the next call's start.
    const auto out = fold_calls(
        {cupti(100, 110, 1), cupti(120, 130, 2, kGetDevice), cupti(140, 150, 3), hooked(160, 165), hooked(200, 205)});
    REQUIRE(out.size() == 3);
    CHECK(with_correlation(out, 1)->event.kind == EventKind::CudaApi);
    CHECK(with_correlation(out, 2)->event.kind == EventKind::CuptiApi);
    CHECK(with_correlation(out, 3)->event.kind == EventKind::CudaApi);
  }
  SECTION("a CUPTI record of a thread not found (CUPTI's pthread ids): paired with a call of any thread") {
    CallRecord lost = cupti(110, 190, 7, kLaunch, 9);
    lost.thread_known = false;
    CallRecord other = cupti(300, 310, 8, kGetDevice, 9);
    other.thread_known = false;
    const auto out = fold_calls({hooked(100, 200, kLaunch, 2), lost, other});
    REQUIRE(out.size() == 2);
    CHECK(with_correlation(out, 7)->event.kind == EventKind::CudaApi);
    CHECK(with_correlation(out, 7)->event.thread == 2);  // the calling thread's
    CHECK(with_correlation(out, 8)->event.thread == 9);  // unpaired: where it was
  }
  SECTION("CUPTI's times where they lie inside the hook's, else the hook's, CUPTI's kept beside them") {
    const auto inside = fold_calls({hooked(100, 200), cupti(110, 190, 7)});
    CHECK(inside[0].event.start_ns == 110);
    CHECK(inside[0].info.cupti_start_ns == 0);  // the event's own
    CHECK(inside[0].info.cupti_end_ns == 0);
    const auto out = fold_calls({hooked(100, 200), cupti(50, 150, 7)});
    CHECK(out[0].event.start_ns == 100);
    CHECK(out[0].event.end_ns == 200);
    CHECK(out[0].info.cupti_start_ns == 50);  // launch latency's start, the Chrome export's times
    CHECK(out[0].info.cupti_end_ns == 150);
  }
  SECTION("farther apart than the slack, and CUPTI's record after the hooked call: no pair") {
    const auto out = fold_calls({hooked(100, 110), cupti(10'000'000, 10'000'010, 1)}, 1'000);
    CHECK(out.size() == 2);
  }
}

TEST_CASE("CUDA join: while CUPTI records, a hooked call and CUPTI's record of it are one event in the window",
          "[collector][cuda][fold]") {
  StageFixture f;
  f.region.header().gpu_flush.store(1);
  CudaJoin join(f.context);
  join.correlate({55, 9});
  decoded::CudaApiCall call;
  call.end_ts = 200;
  call.info.kernel_name = f.region.name("gemm");
  call.info.result = 0;
  join.api_call(decoded::Record{100, f.region.name("cudaLaunchKernel")}, call, 0, 3, f.trace);
  decoded::GpuActivity api;
  api.kind = EventKind::CuptiApi;
  api.on_lane = false;
  api.tid = 100;  // thread 0's
  api.end_ts = 190;
  api.info.correlation_id = 55;
  api.info.cbid = 211;
  join.gpu_activity(decoded::Record{110, f.region.name("cudaLaunchKernel")}, api, 1, 3, f.trace);
  api.end_ts = 260;
  api.info.correlation_id = 56;
  api.info.cbid = 17;
  join.gpu_activity(decoded::Record{250, f.region.name("cudaGetDevice")}, api, 1, 3, f.trace);
  CHECK(f.out.events.empty());  // held until the window is written
  join.release(3, f.trace);
  REQUIRE(f.out.events.size() == 2);
  const auto launch = std::find_if(f.out.events.begin(), f.out.events.end(),
                                   [&](const trace::Event& e) { return f.text(e.name) == "cudaLaunchKernel"; });
  REQUIRE(launch != f.out.events.end());
  CHECK(launch->kind == EventKind::CudaApi);
  CHECK(launch->start_ns == 110);
  const trace::CudaInfo& info = f.out.cuda.at(launch->arg - 1);
  CHECK(info.correlation_id == 55);
  CHECK(info.external_id == 9);
  CHECK(f.text(info.kernel_name) == "gemm");
  const auto other = std::find_if(f.out.events.begin(), f.out.events.end(),
                                  [&](const trace::Event& e) { return f.text(e.name) == "cudaGetDevice"; });
  REQUIRE(other != f.out.events.end());
  CHECK(other->kind == EventKind::CuptiApi);
  CHECK(other->thread == launch->thread);
}
