// The collector's window book (launcher/collect/window_book.hpp): the
// boundaries a process publishes become windows, ticks find their window's
// slot, events for a window already written are late, steps restart, end
// where the next begins and are cut at their window's end, and an ended
// window is ready once nothing holds it.
#include <catch2/catch.hpp>

#include "collect/window_book.hpp"
#include "collector_fixtures.hpp"

using ptprof::launcher::Window;
using ptprof::launcher::WindowBook;
using ptprof::testing::SyntheticRegion;
using ptprof::wire::BoundaryKind;
namespace wire = ptprof::wire;
using Clock = std::chrono::steady_clock;

namespace {

// The book of `region` once window 0 began at tick 0 and ended at 100.
WindowBook book_of_window_0(SyntheticRegion& region) {
  region.boundary(BoundaryKind::WindowBegin, 0, 0);
  region.boundary(BoundaryKind::WindowEnd, 100, 0);
  WindowBook book;
  book.read_boundaries(region.header());
  return book;
}

}  // namespace

TEST_CASE("window book: boundaries become windows; ticks find their slot, between windows none",
          "[collector][windows]") {
  SyntheticRegion region{1};
  region.boundary(BoundaryKind::WindowBegin, 100, 0);
  region.boundary(BoundaryKind::WindowEnd, 200, 0);
  region.boundary(BoundaryKind::WindowBegin, 300, 2);  // window 1 was never begun here
  WindowBook book;
  book.read_boundaries(region.header());
  REQUIRE(book.windows().size() == 2);
  CHECK(book.windows()[1].index == 2);
  CHECK(book.windows()[0].end == 200);
  CHECK(book.windows()[1].end == UINT64_MAX);
  CHECK(book.window_slot(50) == -1);
  CHECK(book.window_slot(100) == 0);
  CHECK(book.window_slot(199) == 0);
  CHECK(book.window_slot(200) == -1);
  CHECK(book.window_slot(299) == -1);
  CHECK(book.window_slot(300) == 1);  // the slot, not the window number
  CHECK(book.begun(2));
  CHECK_FALSE(book.begun(1));
  region.boundary(BoundaryKind::WindowEnd, 400, 2);
  region.boundary(BoundaryKind::GpuFlushed, 410, 2);
  book.read_boundaries(region.header());  // only what is new
  REQUIRE(book.windows().size() == 2);
  CHECK(book.windows()[1].end == 400);
  CHECK(book.windows()[1].gpu_flushed);
  CHECK_FALSE(book.windows()[0].gpu_flushed);
}

TEST_CASE("window book: device work that starts after its window's end stays in it until it is written",
          "[collector][windows]") {
  SyntheticRegion region{1};
  region.boundary(BoundaryKind::WindowBegin, 100, 0);
  region.boundary(BoundaryKind::WindowEnd, 200, 0);
  region.boundary(BoundaryKind::WindowBegin, 300, 1);
  region.boundary(BoundaryKind::WindowEnd, 400, 1);
  WindowBook book;
  book.read_boundaries(region.header());
  CHECK(book.device_window_for(150) == 0);  // inside: as any event
  CHECK(book.device_window_for(250) == 0);  // after window 0's end, before window 1 began
  CHECK(book.device_window_for(350) == 1);
  CHECK(book.device_window_for(900) == 1);  // after the last window's end
  CHECK(book.device_window_for(50) == -1);  // before any window
  CHECK(book.window_for(250) == -1);        // a CPU event there is in no window
  book.at(1).done = true;
  CHECK(book.device_window_for(900) == -1);  // written: nowhere, and not late
  CHECK(book.late_events() == 0);
  CHECK(book.device_window_for(350) == -1);  // inside a written window: late
  CHECK(book.late_events() == 1);
}

TEST_CASE("window book: an event for a window already written is late, counted, and goes nowhere",
          "[collector][windows]") {
  SyntheticRegion region{1};
  WindowBook book = book_of_window_0(region);
  CHECK(book.window_for(50) == 0);
  CHECK(book.late_events() == 0);
  book.windows()[0].done = true;
  CHECK(book.window_for(50) == -1);
  CHECK(book.window_for(150) == -1);  // outside every window: not late
  CHECK(book.late_events() == 1);
  CHECK(book.begun(0));
  CHECK_FALSE(book.open(0));
}

TEST_CASE("window book: boundaries overwritten before they were read are skipped", "[collector][windows]") {
  SyntheticRegion region{1};
  WindowBook book;
  // More boundaries than the ring of them holds: the oldest are gone.
  const uint32_t total = wire::kMaxBoundaries + 4;
  for (uint32_t i = 0; i < total; ++i) {
    const uint32_t n = region.header().boundary_count.load();
    region.header().boundaries[n % wire::kMaxBoundaries] =
        wire::Boundary{uint64_t(i) * 10, uint32_t(BoundaryKind::WindowBegin), i, 0};
    region.header().boundary_count.store(n + 1);
  }
  book.read_boundaries(region.header());
  REQUIRE(book.windows().size() == wire::kMaxBoundaries);
  CHECK(book.windows()[0].index == 4);
}

TEST_CASE("window book: a step ends where the next begins, restarts when repeated, is cut at its window's end",
          "[collector][windows]") {
  SyntheticRegion region{1};
  region.boundary(BoundaryKind::WindowBegin, 0, 0);
  region.boundary(BoundaryKind::WindowEnd, 100, 0);
  region.boundary(BoundaryKind::WindowBegin, 150, 1);
  WindowBook book;
  book.read_boundaries(region.header());
  book.step_began(10, 0, 0);
  book.step_began(20, 0, 0);   // step 0 again: it restarts
  book.step_began(60, 1, 0);   // step 0 ends here
  book.step_began(160, 2, 0);  // step 1 ends here, cut at window 0's end
  Window& w0 = book.windows()[0];
  REQUIRE(w0.steps.closed.size() == 2);
  CHECK(w0.steps.closed[0].number == 0);
  CHECK(w0.steps.closed[0].start == 20);
  CHECK(w0.steps.closed[0].end == 60);
  CHECK(w0.steps.closed[1].number == 1);
  CHECK(w0.steps.closed[1].end == 100);
  CHECK_FALSE(w0.steps.open);
  Window& w1 = book.windows()[1];
  CHECK(w1.steps.open);
  CHECK(w1.steps.current.number == 2);
  WindowBook::close_step(w1, 500);
  REQUIRE(w1.steps.closed.size() == 1);
  CHECK(w1.steps.closed[0].end == 500);  // window 1 is still open
  book.step_began(120, 9, 0);            // between windows: no step, not late
  CHECK(book.late_events() == 0);
}

TEST_CASE("window book: an ended window is ready once drained past, its spans ended and its GPU records in",
          "[collector][windows]") {
  SyntheticRegion region{1};
  WindowBook book = book_of_window_0(region);
  Window& w = book.windows()[0];
  const auto now = w.end_seen;
  const std::chrono::milliseconds grace(1000);
  CHECK_FALSE(WindowBook::ready(w, 100, false, grace, now));  // not drained past its end
  CHECK(WindowBook::ready(w, 101, false, grace, now));
  book.span_opened(0);
  CHECK(w.open_spans == 1);
  CHECK_FALSE(WindowBook::ready(w, 101, false, grace, now));
  CHECK(WindowBook::ready(w, 101, false, grace, now + grace));  // the grace period is over
  CHECK(&book.span_closed(0) == &w);
  CHECK(w.open_spans == 0);
  CHECK_FALSE(WindowBook::ready(w, 101, true, grace, now));  // waits for GpuFlushed
  w.gpu_flushed = true;
  CHECK(WindowBook::ready(w, 101, true, grace, now));
  w.done = true;
  CHECK_FALSE(WindowBook::ready(w, 101, false, grace, now + grace));
  region.boundary(BoundaryKind::WindowBegin, 200, 1);
  book.read_boundaries(region.header());
  CHECK_FALSE(WindowBook::ready(book.windows()[1], UINT64_MAX, false, grace, Clock::now() + grace));  // not ended
}
