// The collector's span pairing (launcher/collect/span_stack.hpp): an end
// closes the innermost span it matches, the spans left open above it are
// closed with it, truncated; a window being written takes its open spans.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "collect/span_stack.hpp"

using ptprof::launcher::OpenSpan;
using ptprof::launcher::SpanStack;
using ptprof::trace::EventKind;
namespace trace = ptprof::trace;
namespace wire = ptprof::wire;

namespace {

OpenSpan range(uint32_t name) {
  OpenSpan s;
  s.kind = EventKind::Range;
  s.name = name;
  return s;
}

OpenSpan op(uint32_t name, uint64_t handle, wire::OpScope scope = wire::OpScope::Function) {
  OpenSpan s;
  s.kind = EventKind::Op;
  s.name = name;
  s.handle = handle;
  s.scope = uint8_t(scope);
  return s;
}

struct Closed {
  uint32_t name;
  uint64_t end;
  uint16_t flags;
  bool operator==(const Closed&) const = default;
};

struct Recorder {
  std::vector<Closed> closed;
  auto closer() {
    return [this](const OpenSpan& s, uint64_t end, uint16_t flags) { closed.push_back({s.name, end, flags}); };
  }
};

}  // namespace

TEST_CASE("span stack: a pop closes the innermost range and truncates the ops left open above it",
          "[collector][spans]") {
  SpanStack stack;
  Recorder r;
  stack.push(range(1), 0);
  stack.push(range(2), 0);
  stack.push(op(3, 30), 0);
  stack.push(op(4, 40), 0);
  stack.close_range(100, r.closer());
  CHECK(r.closed == std::vector<Closed>{{4, 100, trace::kTruncated}, {3, 100, trace::kTruncated}, {2, 100, 0}});
  REQUIRE(stack.size() == 1);
  CHECK(stack.innermost()->name == 1);
}

TEST_CASE("span stack: an op's end closes the op of its handle, not the innermost one", "[collector][spans]") {
  SpanStack stack;
  Recorder r;
  stack.push(op(1, 10), 0);
  stack.push(op(2, 20), 0);
  stack.push(range(3), 0);
  stack.close_op(10, 50, r.closer());
  CHECK(r.closed == std::vector<Closed>{{3, 50, trace::kTruncated}, {2, 50, trace::kTruncated}, {1, 50, 0}});
  CHECK(stack.empty());
}

TEST_CASE("span stack: an end that matches nothing closes nothing", "[collector][spans]") {
  SpanStack stack;
  Recorder r;
  stack.push(op(1, 10), 0);
  stack.close_op(99, 50, r.closer());  // its begin was dropped
  stack.close_range(60, r.closer());   // no range is open
  CHECK(r.closed.empty());
  CHECK(stack.size() == 1);
}

TEST_CASE("span stack: a thread that is gone has every span closed, truncated", "[collector][spans]") {
  SpanStack stack;
  Recorder r;
  stack.push(range(1), 0);
  stack.push(op(2, 20), 0);
  stack.close_all(70, r.closer());
  CHECK(r.closed == std::vector<Closed>{{2, 70, trace::kTruncated}, {1, 70, trace::kTruncated}});
  CHECK(stack.empty());
  stack.close_all(80, r.closer());  // nothing left
  CHECK(r.closed.size() == 2);
}

TEST_CASE("span stack: a window being written takes its open spans, which stay open in no window",
          "[collector][spans]") {
  SpanStack stack;
  stack.push(range(1), 0);
  stack.push(op(2, 20), 1);
  stack.push(op(3, 30), 0);
  std::vector<uint32_t> cut;
  stack.leave_window(0, [&](const OpenSpan& s) { cut.push_back(s.name); });
  CHECK(cut == std::vector<uint32_t>{1, 3});
  REQUIRE(stack.size() == 3);
  cut.clear();
  stack.leave_window(0, [&](const OpenSpan& s) { cut.push_back(s.name); });
  CHECK(cut.empty());  // taken once
  std::vector<int32_t> windows;
  stack.close_all(90, [&](const OpenSpan& s, uint64_t, uint16_t) { windows.push_back(s.window); });
  CHECK(windows == std::vector<int32_t>{-1, 1, -1});
}

TEST_CASE("span stack: the outermost operator is the first op that is not a user scope", "[collector][spans]") {
  SpanStack stack;
  CHECK(stack.outermost_operator() == nullptr);
  CHECK(stack.innermost() == nullptr);
  stack.push(op(1, 10, wire::OpScope::UserScope), 0);
  stack.push(range(2), 0);
  CHECK(stack.outermost_operator() == nullptr);
  stack.push(op(3, 30), 0);
  stack.push(op(4, 40), 0);
  REQUIRE(stack.outermost_operator() != nullptr);
  CHECK(stack.outermost_operator()->name == 3);
  CHECK(stack.innermost()->name == 4);
}
