// The agent's remembered native walks (agent/src/stacks/native_walk_cache.cpp): a
// remembered stack is returned only when the stack still holds it, and a
// remembered stack the stack check cannot tell from the real one is caught
// by the periodic walk. Uses the system's libunwind; skipped without it.
#include <dlfcn.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <thread>
#include <vector>

#include "stacks/native_walk_cache.hpp"
#include "test_skip.hpp"

using ptprof::agent::NativeWalkCache;
using ptprof::agent::Unwinder;

namespace {

#if defined(__x86_64__)
constexpr bool kOnX86 = true;
#else
constexpr bool kOnX86 = false;
#endif

struct Probe {
  NativeWalkCache* cache = nullptr;
  const Unwinder* unwinder = nullptr;
  uintptr_t stop_begin = 0, stop_end = 0;
  uintptr_t out[NativeWalkCache::kMaxFrames] = {};
  uint32_t n = 0;
  uintptr_t leaf_frame = 0;   // where the capture was made from
  uintptr_t root_return = 0;  // the return address into root(): where stacks stop
};

// No tail calls (each caller stays a frame), no inlining, no folding of the
// two paths into one function (their bodies differ). noipa, not only
// noinline: at -O3 GCC's interprocedural constant propagation clones root()
// for the constant function pointer it is called with (root.constprop.0), so
// the two paths would return into two different copies of root() and no
// longer share the stack address and return address the test is about.
[[gnu::noipa]] void leaf(Probe& p) {
  p.leaf_frame = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  p.n = p.cache->capture(*p.unwinder, p.out, NativeWalkCache::kMaxFrames, p.stop_begin, p.stop_end);
  asm volatile("" ::: "memory");
}
[[gnu::noipa]] void middle(Probe& p) {
  leaf(p);
  asm volatile("" ::: "memory");
}
volatile int g_path_sink = 0;
[[gnu::noipa]] void path_a(Probe& p) {
  p.root_return = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  middle(p);
  g_path_sink = 1;
}
[[gnu::noipa]] void path_b(Probe& p) {
  p.root_return = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  middle(p);
  g_path_sink = 2;
}
// One call site, so that both paths return to the same address in it.
[[gnu::noipa]] void root(void (*path)(Probe&), Probe& p) {
  path(p);
  asm volatile("" ::: "memory");
}

// The frames up to and including the first in the stop range.
std::vector<uintptr_t> to_stop(const Probe& p) {
  std::vector<uintptr_t> frames;
  for (uint32_t i = 0; i < p.n; ++i) {
    frames.push_back(p.out[i]);
    if (p.out[i] >= p.stop_begin && p.out[i] < p.stop_end) return frames;
  }
  return {};  // did not reach it
}

struct Libunwind {
  void* lib = ::dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  Unwinder u;
  Libunwind() {
    if (!lib) return;
    const auto sym = [this]<typename F>(F& f, const char* name) { f = reinterpret_cast<F>(::dlsym(lib, name)); };
    sym(u.backtrace, "unw_backtrace");
    sym(u.getcontext, "_Ux86_64_getcontext");
    sym(u.init_local, "_ULx86_64_init_local");
    sym(u.step, "_ULx86_64_step");
    sym(u.get_reg, "_ULx86_64_get_reg");
  }
  ~Libunwind() {
    if (lib) ::dlclose(lib);
  }
  Libunwind(const Libunwind&) = delete;
  Libunwind& operator=(const Libunwind&) = delete;
  bool usable() const { return u.backtrace && u.can_locate_slots(); }
};

// The stacks of both paths walked in full (the cache off), the stop range
// set to the return address into root().
struct Expected {
  std::vector<uintptr_t> a, b;
};
Expected walk_both(Probe& p, NativeWalkCache& cache) {
  cache.set_enabled(false);
  root(path_a, p);
  p.stop_begin = p.root_return;
  p.stop_end = p.root_return + 1;
  root(path_a, p);
  Expected e{to_stop(p), {}};
  const uintptr_t frame_a = p.leaf_frame;
  root(path_b, p);
  e.b = to_stop(p);
  // Both paths capture from the same stack address: the cache must tell
  // them apart by what the stack holds, not by where the capture is made.
  REQUIRE(p.leaf_frame == frame_a);
  cache.set_enabled(true);
  return e;
}

}  // namespace

TEST_CASE("native walk cache: two paths to one stack address each get their own stack", "[stacks][native]") {
  Libunwind lu;
  if (!kOnX86 || !lu.usable()) {
    PTPROF_SKIP("remembered walks need x86-64 and libunwind.so.8 with its step API");
  }
  NativeWalkCache cache;
  Probe p;
  p.cache = &cache;
  p.unwinder = &lu.u;
  const Expected e = walk_both(p, cache);
  REQUIRE(e.a.size() >= 4);  // leaf <- middle <- path <- root
  REQUIRE(e.b.size() == e.a.size());
  REQUIRE(e.a != e.b);
  // They differ in an outer frame (the return into path_a or path_b), not
  // the innermost.
  REQUIRE(e.a.front() == e.b.front());

  for (int i = 0; i < 1000; ++i) {
    const bool b = (i * 7) % 3 == 0;
    root(b ? path_b : path_a, p);
    REQUIRE(to_stop(p) == (b ? e.b : e.a));
  }
  const NativeWalkCache::Stats& s = cache.stats();
  CHECK(s.fills == 2);
  CHECK(s.hits > 900);  // the remembered stacks were used
  CHECK(s.rechecks > 0);
  CHECK(s.mismatches == 0);
}

TEST_CASE("native walk cache: a remembered stack the check cannot tell apart is caught by the recheck",
          "[stacks][native]") {
  Libunwind lu;
  if (!kOnX86 || !lu.usable()) {
    PTPROF_SKIP("remembered walks need x86-64 and libunwind.so.8 with its step API");
  }
  NativeWalkCache cache;
  Probe p;
  p.cache = &cache;
  p.unwinder = &lu.u;
  const Expected e = walk_both(p, cache);
  root(path_a, p);  // remembered
  REQUIRE(cache.stats().fills == 1);
  REQUIRE(cache.corrupt_for_test());

  // Stale until the recheck (every kRecheck-th use), right from then on.
  int stale = 0;
  for (uint32_t i = 0; i < 4 * NativeWalkCache::kRecheck; ++i) {
    root(path_a, p);
    if (to_stop(p) != e.a) {
      ++stale;
      REQUIRE(cache.stats().mismatches == 0);
    }
  }
  CHECK(stale > 0);  // the corruption was returned: the cache was in use
  CHECK(stale < int(NativeWalkCache::kRecheck));
  CHECK(cache.stats().mismatches == 1);
  root(path_b, p);
  CHECK(to_stop(p) == e.b);
}

// #28 defect 5: a fork while another thread is inside libunwind (its locks,
// glibc's loader lock) left the child waiting forever on its first walk. The
// unwinder here is a stand-in that stays "inside" until told to leave.
namespace {

std::atomic<bool> g_walker_inside{false};
std::atomic<bool> g_walker_may_leave{false};
int blocking_backtrace(void**, int) {
  g_walker_inside = true;
  while (!g_walker_may_leave) sched_yield();
  return 0;
}

// The stand-in unwinder, passing through `gate`; walks leave at once unless
// `hold` (then they wait for g_walker_may_leave).
Unwinder gated_unwinder(ptprof::agent::ForkGate& gate, bool hold) {
  Unwinder u;
  u.backtrace = blocking_backtrace;
  u.gate = &gate;
  g_walker_inside = false;
  g_walker_may_leave = !hold;
  return u;
}

}  // namespace

TEST_CASE("native walk cache: fork waits for a walk in progress, and walks wait for the fork", "[stacks][native]") {
  ptprof::agent::ForkGate gate;
  const Unwinder u = gated_unwinder(gate, /*hold=*/true);
  uintptr_t out[NativeWalkCache::kMaxFrames];

  NativeWalkCache first;
  std::thread walker([&] { first.capture(u, out, NativeWalkCache::kMaxFrames, 0, 0); });
  while (!g_walker_inside) sched_yield();
  REQUIRE(gate.inside() == 1);
  std::atomic<bool> closed{false};
  std::thread forker([&] {
    gate.close();
    closed = true;
  });
  while (!gate.closing()) sched_yield();
  CHECK_FALSE(closed);  // the walk is still in libunwind
  g_walker_may_leave = true;
  walker.join();
  forker.join();
  CHECK(closed);
  CHECK(gate.inside() == 0);

  // Closed: a new walk waits outside until the fork is over.
  std::atomic<bool> walked{false};
  NativeWalkCache second;
  std::thread late([&] {
    second.capture(u, out, NativeWalkCache::kMaxFrames, 0, 0);
    walked = true;
  });
  while (!gate.waiting()) sched_yield();
  CHECK_FALSE(walked);
  CHECK(gate.inside() == 0);
  gate.open_in_parent();
  late.join();
  CHECK(walked);
  CHECK(second.stats().walks == 1);
}

TEST_CASE("native walk cache: a fork child walks although its parent's gate was closed", "[stacks][native]") {
  ptprof::agent::ForkGate gate;
  const Unwinder u = gated_unwinder(gate, /*hold=*/false);
  gate.close();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    gate.open_in_child();
    NativeWalkCache walks;
    uintptr_t out[NativeWalkCache::kMaxFrames];
    walks.capture(u, out, NativeWalkCache::kMaxFrames, 0, 0);
    ::_exit(walks.stats().walks == 1 && gate.inside() == 0 ? 0 : 1);
  }
  gate.open_in_parent();
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
