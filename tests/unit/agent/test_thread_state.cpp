// The hot path's per-thread state (agent/src/record/thread_state.hpp) on its
// own, with the runtime's services doubled (services_double.hpp): what its
// two name caches spare the process-wide arena, how operators' and scopes'
// levels match their ends, when a step's end is due, and how a thread gets
// its state.
#include <catch2/catch.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "private_ring.hpp"
#include "record/thread_state.hpp"
#include "services_double.hpp"

using namespace ptprof;
using namespace ptprof::agent;
using ptprof::agent::testing::PrivateRing;
using ptprof::agent::testing::ServicesScope;

namespace {

// Names whose text hashes to the same set of the text cache (two ways each).
std::vector<std::string> names_in_one_set(size_t count) {
  std::vector<std::string> found;
  const auto set_of = [](const std::string& s) {
    return ThreadState::hash_text(s.data(), s.size()) & (ThreadState::kTextCacheSize - 2);
  };
  std::string first = "aten::op_0";
  found.push_back(first);
  for (int i = 1; found.size() < count; ++i) {
    std::string s = "aten::op_" + std::to_string(i);
    if (set_of(s) == set_of(first)) found.push_back(s);
  }
  return found;
}

}  // namespace

TEST_CASE("a name's id comes from the thread's pointer cache after its first intern", "[agent][thread_state]") {
  ServicesScope services;
  auto t = std::make_unique<ThreadState>();
  static constexpr char kName[] = "aten::add";
  const uint32_t id = t->intern(kName);
  CHECK(id == 1);
  CHECK(t->intern(kName) == id);
  CHECK(t->intern(kName) == id);
  CHECK(services->intern_calls == 1);
}

TEST_CASE("a name in a new buffer each time is found by its text", "[agent][thread_state]") {
  // Autograd node names and user scopes are std::strings inside each
  // RecordFunction: the pointer misses, the text does not.
  ServicesScope services;
  auto t = std::make_unique<ThreadState>();
  const std::vector<std::string> buffers(5, std::string("AddBackward0"));
  for (const std::string& b : buffers) CHECK(t->intern(b.c_str()) == 1);
  CHECK(services->intern_calls == 1);
  // Another name is another id, and asked of the arena once.
  CHECK(t->intern(std::string("MulBackward0").c_str()) == 2);
  CHECK(t->intern(std::string("MulBackward0").c_str()) == 2);
  CHECK(services->intern_calls == 2);
}

TEST_CASE("a name the full arena refused costs the arena once per thread", "[agent][thread_state]") {
  ServicesScope services;
  services->capacity = 0;
  auto t = std::make_unique<ThreadState>();
  for (int i = 0; i < 4; ++i) CHECK(t->intern(std::string("user scope").c_str()) == 0);
  CHECK(services->intern_calls == 1);
  // Another thread asks again: the refusal is remembered per thread.
  auto other = std::make_unique<ThreadState>();
  CHECK(other->intern("user scope") == 0);
  CHECK(services->intern_calls == 2);
}

TEST_CASE("the text cache keeps the two newest names of a set", "[agent][thread_state]") {
  ServicesScope services;
  auto t = std::make_unique<ThreadState>();
  const std::vector<std::string> names = names_in_one_set(3);
  const auto intern_copy = [&](const std::string& s) { return t->intern(std::string(s).c_str()); };
  const uint32_t a = intern_copy(names[0]);
  const uint32_t b = intern_copy(names[1]);
  CHECK(services->intern_calls == 2);
  CHECK(intern_copy(names[0]) == a);  // both ways hold
  CHECK(intern_copy(names[1]) == b);
  CHECK(services->intern_calls == 2);
  // A third name takes way 0 and moves the newer one to way 1: the oldest
  // (names[0], last found, but inserted first) is the one let go.
  const uint32_t c = intern_copy(names[2]);
  CHECK(services->intern_calls == 3);
  CHECK(intern_copy(names[1]) == b);
  CHECK(intern_copy(names[2]) == c);
  CHECK(services->intern_calls == 3);
  CHECK(intern_copy(names[0]) == a);  // asked again, same id
  CHECK(services->intern_calls == 4);
}

TEST_CASE("a name the arena cut short keeps its id and is never read past its copy", "[agent][thread_state]") {
  ServicesScope services;
  services->max_bytes = 8;
  auto t = std::make_unique<ThreadState>();
  const std::string long_name = "a_name_longer_than_the_arena_keeps";
  const uint32_t id = t->intern(std::string(long_name).c_str());
  CHECK(id == 1);
  CHECK(services->names.front() == long_name.substr(0, 8));
  // The copy is shorter than the text: neither cache may take it for a
  // match (that would compare past its end), so the arena is asked again,
  // and answers the same id.
  CHECK(t->intern(std::string(long_name).c_str()) == id);
  CHECK(t->intern(long_name.c_str()) == id);
}

TEST_CASE("an operator's end finds its level a few levels down, no deeper", "[agent][thread_state]") {
  auto t = std::make_unique<ThreadState>();
  for (uint64_t h = 1; h <= 6; ++h) t->push_op({h, false, 0});
  CHECK(t->innermost_op()->handle == 6);
  // Op 5 ends before op 6 (an end out of order): found within reach, and
  // the level above it stays.
  const std::optional<OpLevel> five = t->pop_op(5);
  REQUIRE(five);
  CHECK(five->handle == 5);
  CHECK(t->innermost_op()->handle == 6);
  // Op 1 is 5 levels down, beyond kEndReach: its end is not matched.
  CHECK_FALSE(t->pop_op(1));
  CHECK(t->pop_op(6));
  CHECK(t->pop_op(4));
  CHECK(t->pop_op(3));
  CHECK(t->pop_op(2));
  CHECK(t->pop_op(1));
  CHECK(t->at_top_level());
}

TEST_CASE("levels past the deepest kept are counted, and their ends match none", "[agent][thread_state]") {
  auto t = std::make_unique<ThreadState>();
  for (uint64_t h = 1; h <= kMaxDepth; ++h) t->push_op({h, false, 0});
  CHECK(t->ops_full());
  t->push_op({kMaxDepth + 1, false, 0});  // not kept
  CHECK(t->innermost_op() == nullptr);
  CHECK_FALSE(t->pop_op(kMaxDepth + 1));
  CHECK(t->pop_op(kMaxDepth));
  CHECK(t->innermost_op()->handle == kMaxDepth - 1);
}

TEST_CASE("a step that ends inside a scope begun in the same step waits for that scope", "[agent][thread_state]") {
  auto t = std::make_unique<ThreadState>();
  // A scope begun in step 3 (a user's record_function around the loop
  // body), inside which the optimizer's step ends step 3.
  t->push_scope(3);
  CHECK_FALSE(t->take_step_end(/*ends_step=*/true, /*step=*/3));
  // The enclosing scope ends: the held end is due now.
  t->pop_scope();
  CHECK(t->take_step_end(false, 3));
  CHECK_FALSE(t->take_step_end(false, 3));  // once
  // A scope begun in an earlier step does not hold the end back.
  t->push_scope(2);
  CHECK(t->take_step_end(true, 3));
  // Ranges are scopes too.
  t->push_range(7, 4);
  CHECK_FALSE(t->take_step_end(true, 4));
  CHECK(t->pop_range() == 7u);
  CHECK(t->take_step_end(false, 4));
}

TEST_CASE("a thread registers once, and gets no state while inert or inside the agent", "[agent][thread_state]") {
  ServicesScope services;
  auto state = std::make_unique<ThreadState>();
  services->registered = state.get();
  CHECK(thread_state() == nullptr);  // no session: not even asked
  CHECK(services->register_calls == 0);
  services->active = true;
  CHECK(thread_state() == state.get());  // registration sets tls_thread in the runtime; here, by hand:
  detail::tls_thread = state.get();
  CHECK(thread_state() == state.get());
  CHECK(services->register_calls == 1);
  state->busy = true;  // the agent's own slow path on this thread
  CHECK(thread_state() == nullptr);
  state->busy = false;
  forget_thread_state();
  CHECK(detail::tls_thread == nullptr);
}

TEST_CASE("records carry the thread's clock and land in its ring", "[agent][thread_state]") {
  ServicesScope services;
  PrivateRing ring;
  auto t = std::make_unique<ThreadState>();
  t->ring = ring.writer();
  t->clock = clock::Kind::Monotonic;
  const uint64_t before = clock::ticks(clock::Kind::Monotonic);
  t->emit_instant(wire::RecordType::Mark, t->intern("ptprof: mark"), t->now());
  const uint64_t after = clock::ticks(clock::Kind::Monotonic);
  const auto written = ring.take();
  REQUIRE(written.size() == 1);
  CHECK(written[0].type == wire::RecordType::Mark);
  CHECK(written[0].arg == 1);
  CHECK(written[0].ts >= before);
  CHECK(written[0].ts <= after);
}
