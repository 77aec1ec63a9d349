#include "stacks/native_walk_cache.hpp"

#include <pthread.h>
#include <ucontext.h>

#include <algorithm>
#include <cstring>

namespace ptprof::agent {
namespace {

#if defined(__x86_64__)
constexpr bool kSupported = true;
#else
constexpr bool kSupported = false;
#endif
constexpr int kRegSp = 7;   // UNW_X86_64_RSP
constexpr int kRegIp = 16;  // UNW_X86_64_RIP
constexpr uint32_t kStepped = NativeWalkCache::kMaxFrames + 8;

// The frames of the calling thread with each one's stack pointer, walked one
// step at a time (slow: only when a stack is remembered). Frame 0 is this
// function, 1 its caller (NativeWalkCache::capture), 2 the caller's caller.
[[gnu::noinline]] uint32_t step_walk(const Unwinder& u, uintptr_t* ips, uintptr_t* sps) {
  ucontext_t context;
  alignas(16) uint64_t cursor[256];  // unw_cursor_t: 127 words on x86-64
  if (u.getcontext(&context) != 0 || u.init_local(cursor, &context) < 0) return 0;
  uint32_t n = 0;
  do {
    uint64_t ip = 0, sp = 0;
    if (u.get_reg(cursor, kRegIp, &ip) < 0 || u.get_reg(cursor, kRegSp, &sp) < 0) break;
    ips[n] = ip;
    sps[n] = sp;
    ++n;
  } while (n < kStepped && u.step(cursor) > 0);
  return n;
}

uint32_t stop_index(const uintptr_t* out, uint32_t n, uintptr_t begin, uintptr_t end) {
  uint32_t i = 0;
  while (i < n && (out[i] < begin || out[i] >= end)) ++i;
  return i;
}

}  // namespace

NativeWalkCache::Site* NativeWalkCache::find_site(uintptr_t frame, bool create) {
  uint32_t i = uint32_t(((frame >> 4) * 0x9e3779b97f4a7c15ull) >> 40) & (kTable - 1);
  for (;; i = (i + 1) & (kTable - 1)) {
    const uint32_t s = table_[i];
    if (s == 0) break;
    if (sites_[s - 1].frame == frame) return &sites_[s - 1];
  }
  if (!create || sites_.size() >= kMaxSites) return nullptr;
  sites_.push_back(Site{frame});
  table_[i] = uint32_t(sites_.size());
  return &sites_.back();
}

bool NativeWalkCache::stack_bounds_hold(uintptr_t frame, uint32_t max_offset) {
  if (!stack_known_) {
    stack_known_ = true;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* addr = nullptr;
      size_t size = 0;
      if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
        stack_lo_ = reinterpret_cast<uintptr_t>(addr);
        stack_hi_ = stack_lo_ + size;
      }
      pthread_attr_destroy(&attr);
    }
  }
  // Only the thread's own stack: another (a coroutine's) may be freed and
  // its addresses reused by a smaller one.
  return frame >= stack_lo_ && frame + max_offset + sizeof(uintptr_t) <= stack_hi_;
}

// Not inlined: its frame address keys the stacks, and its callers must see
// it as one frame.
[[gnu::noinline]] uint32_t NativeWalkCache::capture(const Unwinder& u, uintptr_t* out, uint32_t max,
                                                    uintptr_t stop_begin, uintptr_t stop_end) {
  max = std::min(max, kMaxFrames);
  const auto* base = static_cast<const char*>(__builtin_frame_address(0));
  const auto frame = reinterpret_cast<uintptr_t>(base);
  const auto at_offset = [base](uint32_t offset) { return *reinterpret_cast<const uintptr_t*>(base + offset); };
  const bool use = kSupported && enabled_ && stop_begin < stop_end;
  Site* site = use ? find_site(frame, false) : nullptr;
  Variant* hit = nullptr;
  if (site && !site->always_walk) {
    for (uint32_t i = 0; i < site->n_variants && !hit; ++i) {
      Variant& v = variants_[site->variants[i]];
      if (v.n > max) continue;
      bool same = true;
      for (uint32_t j = v.checked; j < v.n && same; ++j) same = at_offset(v.offsets[j]) == v.ips[j];
      if (same) hit = &v;
    }
    if (hit && ++hit->hits % kRecheck != 0) {
      ++stats_.hits;
      std::memcpy(out, hit->ips, hit->n * sizeof out[0]);
      return hit->n;
    }
  }
  // From here on libunwind may be called: not while the process forks.
  const ForkGate::Pass pass(u.gate);
  ++stats_.walks;
  // The walk starts in this function, whose calls to unw_backtrace the
  // compiler may place apart: its frames are dropped, so that a stack reads
  // the same walked from any of them and remembered.
  constexpr uint32_t kOwn = 4;
  uintptr_t walk[kMaxFrames + kOwn];
  const int walked = u.backtrace(reinterpret_cast<void**>(walk), int(max + kOwn));
  const uint32_t total = walked > 0 ? uint32_t(walked) : 0;
  const auto caller = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  uint32_t own = 0;
  while (own < kOwn && own < total && walk[own] != caller) ++own;
  if (own == kOwn || own == total) own = 0;  // not found: as walked
  const uint32_t n = std::min(max, total - own);
  std::copy(walk + own, walk + own + n, out);
  if (hit) {
    ++stats_.rechecks;
    if (n < hit->n || !std::equal(hit->ips, hit->ips + hit->n, out)) {
      ++stats_.mismatches;
      site->always_walk = true;
    }
    return n;
  }
  if (!use || (site && site->always_walk)) return n;
  const uint32_t at = stop_index(out, n, stop_begin, stop_end);
  if (at == n || !u.can_locate_slots() || out[0] != caller) return n;
  if (variants_.size() >= kMaxStacks) return n;  // full: walked
  if (!site) site = find_site(frame, true);
  if (!site) return n;  // the table is full: this address is walked
  if (site->n_variants == kVariants) {
    site->always_walk = true;  // more stacks than kept: walked from now on
    return n;
  }
  // Where each return address lies: frame 2 of the step walk is the caller
  // (out[0]). A return address lies just below the stack pointer of the
  // frame it returns to.
  uintptr_t ips[kStepped], sps[kStepped];
  const uint32_t stepped = step_walk(u, ips, sps);
  Variant v;
  v.n = at + 1;
  bool ok = true;
  uint32_t max_offset = 0;
  for (uint32_t i = 0; ok && i <= at; ++i) {
    const uint32_t s = 2 + i;
    ok = s < stepped && ips[s] == out[i] && sps[s] >= frame + 2 * sizeof(uintptr_t) &&
         sps[s] - sizeof(uintptr_t) - frame < (1u << 30);
    if (!ok) break;
    v.offsets[i] = uint32_t(sps[s] - sizeof(uintptr_t) - frame);
    ok = at_offset(v.offsets[i]) == out[i];
    max_offset = std::max(max_offset, v.offsets[i]);
  }
  if (!ok || !stack_bounds_hold(frame, max_offset)) {
    site->always_walk = true;  // the two walks disagree: never trusted
    return n;
  }
  std::copy(out, out + v.n, v.ips);
  site->variants[site->n_variants++] = uint32_t(variants_.size());
  variants_.push_back(v);
  ++stats_.fills;
  return n;
}

bool NativeWalkCache::corrupt_for_test() {
  for (Variant& v : variants_)
    if (v.n > 0) {
      v.ips[0] ^= 1;  // a different caller ...
      v.checked = 1;  // ... where the check does not look
      return true;
    }
  return false;
}

}  // namespace ptprof::agent
