// Shared-memory layout of a profiling session.
//
// The launcher creates one session object (POSIX shm, mode 0600, random name)
// and passes its name to the target in PTPROF_SESSION. Every process of the
// target's tree that loads the agent creates its own process region (another
// shm object, named after the session) and announces it by claiming a slot in
// the session's process table. The launcher maps each region and drains it.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "ptprof/clock.hpp"
#include "ptprof/ring.hpp"

namespace ptprof::wire {

constexpr uint64_t kSessionMagic = 0x31534650'52505450ull;  // "PTPRPFS1"
constexpr uint64_t kProcessMagic = 0x31524650'52505450ull;  // "PTPRPFR1"
constexpr uint32_t kWireVersion = 1;

constexpr uint32_t kMaxProcesses = 4096;
constexpr uint32_t kMaxThreads = 1024;            // per process
constexpr uint32_t kMaxBoundaries = 1024;         // schedule boundaries kept per process (ring)
constexpr uint64_t kDefaultRingBytes = 2u << 20;  // per thread, power of two
constexpr uint64_t kStringArenaBytes = 16u << 20;

// A process slot goes Free -> Ready, or Free -> Failed when the agent cannot
// create its region (it counts that in lost_processes). Thread slots go
// Free -> Claimed -> Ready.
enum class SlotState : uint32_t { Free = 0, Claimed = 1, Ready = 2, Failed = 3 };

struct ProcessSlot {
  std::atomic<uint32_t> state{0};  // SlotState
  int32_t pid = 0;
  int32_t ppid = 0;
  uint32_t reserved = 0;
  char region[64] = {};  // shm name of the process region
};

struct SessionHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t clock_kind;                   // clock::Kind the agents must use
  uint64_t ring_bytes;                   // per-thread ring capacity (power of two)
  char name[64];                         // the session's own shm name
  std::atomic<uint32_t> next_slot;       // processes that claimed a slot so far
  std::atomic<uint32_t> lost_processes;  // could not register (table full, shm failure)
  char pad[64];
  ProcessSlot slots[kMaxProcesses];
};

struct ThreadSlot {
  std::atomic<uint32_t> state{0};  // SlotState
  int32_t tid = 0;
  char name[48] = {};
  uint64_t reserved = 0;
};

// A schedule boundary published by the agent (see schedule.hpp). The
// launcher classifies events by comparing their ticks with these.
enum class BoundaryKind : uint32_t { WindowBegin = 1, WindowEnd = 2 };
struct Boundary {
  uint64_t ticks;
  uint32_t kind;    // BoundaryKind
  uint32_t window;  // window index, 0-based
  uint64_t step;    // step number at which it happens
};

// Fixed-size part of a process region; the string arena and the rings follow
// at the offsets given.
struct ProcessHeader {
  uint64_t magic;
  uint32_t version;
  int32_t pid;
  int32_t ppid;
  uint32_t max_threads;
  uint64_t ring_bytes;
  uint64_t strings_offset;  // byte offset of the string arena
  uint64_t strings_capacity;
  uint64_t rings_offset;       // byte offset of ring 0
  uint64_t start_realtime_ns;  // wall clock at registration
  uint64_t start_monotonic_ns;
  char cmdline[512];                      // argv joined by spaces, truncated
  std::atomic<uint32_t> thread_count{0};  // slots claimed
  std::atomic<uint32_t> lost_threads{0};  // threads beyond max_threads
  std::atomic<uint64_t> lost_thread_events{0};
  // String arena: entries are [u32 length][bytes][pad to 4]; ids count from 1
  // in order of appearance. `strings_committed` is the byte length published.
  std::atomic<uint64_t> strings_committed{0};
  std::atomic<uint32_t> strings_count{0};
  std::atomic<uint32_t> strings_dropped{0};
  // Window boundaries of the schedule. `in_transition` is raised while one is
  // being published so that the launcher never classifies an event against
  // an incomplete list.
  std::atomic<uint32_t> in_transition{0};
  std::atomic<uint32_t> boundary_count{0};
  std::atomic<uint32_t> schedule_done{0};  // no window will ever begin again
  std::atomic<uint32_t> closed{0};         // process exited cleanly
  std::atomic<uint64_t> current_step{0};
  Boundary boundaries[kMaxBoundaries];
  ThreadSlot threads[kMaxThreads];
};

inline uint64_t ring_stride(uint64_t ring_bytes) { return sizeof(RingControl) + ring_bytes; }

inline uint64_t region_bytes(uint64_t ring_bytes, uint32_t max_threads) {
  uint64_t strings_offset = (sizeof(ProcessHeader) + 4095) & ~uint64_t(4095);
  uint64_t rings_offset = strings_offset + kStringArenaBytes;
  return rings_offset + uint64_t(max_threads) * ring_stride(ring_bytes);
}

inline RingControl* ring_control(void* region, const ProcessHeader* h, uint32_t thread) {
  return reinterpret_cast<RingControl*>(static_cast<uint8_t*>(region) + h->rings_offset +
                                        uint64_t(thread) * ring_stride(h->ring_bytes));
}
inline uint8_t* ring_data(void* region, const ProcessHeader* h, uint32_t thread) {
  return reinterpret_cast<uint8_t*>(ring_control(region, h, thread)) + sizeof(RingControl);
}

// Environment variable through which the launcher hands the session over.
constexpr const char* kSessionEnv = "PTPROF_SESSION";

}  // namespace ptprof::wire
