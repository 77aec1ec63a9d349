// The shared-memory ABI of a profiling session: every structure agent and
// launcher share, the one function that lays out a process region, and
// static checks on sizes, offsets and lock-free atomics, so that a change to
// either side that would break the other does not compile.
//
// The launcher creates one session object (POSIX shm, mode 0600, random name)
// and passes its name to the target in PTPROF_SESSION; it holds an OFD read
// lock on the object for as long as it lives, which is how agents tell that
// it died. Every process of the target's tree that loads the agent creates
// its own process region (another shm object, named after the session with a
// random suffix, so that no other user can take the name first) and announces
// it by claiming a slot in the session's process table. The launcher maps each
// region and drains it.
//
// Nothing here may fault on a store: the launcher reserves the session's pages
// and the agent reserves (fallocate) each part of its region before it uses
// it, so a full /dev/shm costs recording, never a SIGBUS in the target.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "ptprof/clock.hpp"
#include "ptprof/ring.hpp"

namespace ptprof::wire {

constexpr uint64_t kSessionMagic = 0x31534650'52505450ull;  // "PTPRPFS1"
constexpr uint64_t kProcessMagic = 0x31524650'52505450ull;  // "PTPRPFR1"
constexpr uint32_t kWireVersion = 8;  // 5: the string arena's capacity is the agent's (PTPROF_NAMES_MB); steps ended
                                      // and step-rule counts in ProcessHeader; 6: SessionHeader::said_once,
                                      // trigger_claimer; ProcessSlot window_state, follows_pid and role (a child
                                      // follows its ancestor's windows); 7: ProcessHeader step_cost_* (the cost
                                      // measured on the process's own steps); 8: GpuActivityPayload's launch
                                      // facts (registers, shared memory, queued, cbid)

constexpr uint32_t kMaxProcesses = 4096;
constexpr size_t kTriggerPathsBytes = 256u << 10;
constexpr uint32_t kMaxThreads = 1024;            // per process
constexpr uint32_t kMaxBoundaries = 1024;         // schedule boundaries kept per process (ring)
constexpr uint64_t kDefaultRingBytes = 2u << 20;  // per thread, power of two
// The string arena: address space and a sparse object, reserved in /dev/shm
// only as names arrive, so its size costs nothing until a program uses it.
// Past it a name is refused and its events say so (issue 28: names never
// lost up to a limit no program reaches by accident).
constexpr uint64_t kStringArenaBytes = 1ull << 30;
constexpr uint64_t kMinStringArenaBytes = 1u << 20;
constexpr uint64_t kMaxStringArenaBytes = 16ull << 30;
constexpr uint64_t kMinRingBytes = 64u << 10;  // smallest ring: also what a short /dev/shm falls back to
constexpr uint64_t kMaxRingBytes = 1ull << 30;

// A process slot goes Free -> Ready, or Free -> Failed when the agent cannot
// create its region (it counts that in lost_processes); its `region` name is
// published before the object is created, so that whoever cleans up finds it.
// Thread slots go Free -> Ready -> Retired (the thread exited) and back to
// Free once the launcher has drained the ring and closed the thread, so that
// the agent can give the slot, and its ring, to a new thread.
// What a window records beyond operators, as bits: the run's own options
// (PTPROF_RECORD_SHAPES, ...) for every window, or'ed with a trigger's
// (`ptprof trigger --record-shapes ...`) for the window it asks for.
constexpr uint32_t kWindowShapes = 1u << 0;
constexpr uint32_t kWindowMemory = 1u << 1;
constexpr uint32_t kWindowStack = 1u << 2;
constexpr uint32_t kWindowOptionsMask = kWindowShapes | kWindowMemory | kWindowStack;

enum class SlotState : uint32_t { Free = 0, Claimed = 1, Ready = 2, Failed = 3, Retired = 4 };

struct ProcessSlot {
  std::atomic<uint32_t> state{0};  // SlotState
  int32_t pid = 0;
  int32_t ppid = 0;
  // The process's window word (window_word(), schedule.hpp), read and
  // written through std::atomic_ref and woken as a shared futex: its
  // children without steps of their own follow its windows (issue 23). In
  // the session, which every agent maps, because a region's name is gone
  // once the launcher has mapped it.
  uint32_t reserved = 0;
  char region[64] = {};  // shm name of the process region
};

struct SessionHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t clock_kind;                        // clock::Kind the agents must use
  uint64_t ring_bytes;                        // per-thread ring capacity (power of two)
  char name[64];                              // the session's own shm name
  std::atomic<uint32_t> next_slot;            // processes that claimed a slot so far
  std::atomic<uint32_t> lost_processes;       // could not register (table full, shm failure)
  std::atomic<uint32_t> shm_short_processes;  // of those: /dev/shm had no room for the region's header
  std::atomic<uint32_t> launcher_gone;        // set by the agent that found the launcher dead and cleaned up
  // On demand (ptprof run --on-demand): `ptprof trigger` writes the request's
  // fields, then bumps trigger_seq and wakes the agents' trigger watchers
  // (a shared futex on trigger_seq); request k records window k - 1 in the
  // processes it names; the launcher bumps trigger_done to k once that
  // window's files are written, their paths in trigger_paths.
  std::atomic<uint32_t> trigger_seq;
  int32_t trigger_pid;           // 0: every process
  uint64_t trigger_steps;        // steps to record; 0: by duration
  uint64_t trigger_duration_ns;  // record whole steps until this has passed
  std::atomic<uint32_t> trigger_done;
  int32_t launcher_pid;
  uint32_t on_demand;        // the run records only what triggers ask for
  uint32_t trigger_options;  // kWindow* bits the request adds to the run's own
  // A trigger claims the right to write the request's fields by moving
  // trigger_claim from trigger_seq to trigger_seq + 1 (a compare-and-swap),
  // then publishes by storing trigger_seq + 1: two racing triggers never
  // both write one request.
  std::atomic<uint32_t> trigger_claim;
  uint32_t trigger_paths_left;  // files of the window not in trigger_paths (it was full)
  // Warnings said once per run, however many processes meet the same
  // problem: a Said* bit, claimed with claim_said_once by the first to say it.
  std::atomic<uint32_t> said_once;
  // The pid of the trigger holding trigger_claim (0: none, or not yet
  // written): a trigger killed between its claim and its request would block
  // every later one; they take over a claim whose holder is gone.
  std::atomic<int32_t> trigger_claimer;
  ProcessSlot slots[kMaxProcesses];
  // What `ptprof sessions` shows, written before the target starts.
  char output[1024];
  char command[1024];
  // The files of the last window a trigger asked for, one per line, whole
  // lines only: room for thousands of paths.
  char trigger_paths[kTriggerPathsBytes];
};

struct ThreadSlot {
  std::atomic<uint32_t> state{0};  // SlotState
  int32_t tid = 0;
  char name[48] = {};
  uint64_t ring_bytes = 0;  // this slot's ring: the session's, or less when /dev/shm was short
};

// A schedule boundary published by the agent (see schedule.hpp). The
// launcher classifies events by comparing their ticks with these.
//
// GpuFlushed: every GPU activity record (GpuActivity, ExternalCorrelation)
// of `window` is in the rings. CUPTI hands its buffers over asynchronously,
// so records of a window can be committed long after its WindowEnd; while
// ProcessHeader::gpu_flush is set, the launcher writes an ended window only
// after its GpuFlushed (or after the grace period, or when the process ends).
enum class BoundaryKind : uint32_t { WindowBegin = 1, WindowEnd = 2, GpuFlushed = 3 };
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
  char cmdline[512];                            // argv joined by spaces, truncated
  std::atomic<uint32_t> thread_count{0};        // slots claimed
  std::atomic<uint32_t> lost_threads{0};        // threads beyond max_threads
  std::atomic<uint64_t> lost_thread_events{0};  // events those threads tried to record
  // String arena (string_arena.hpp): ids count from 1 in order of
  // appearance. `strings_committed` is the byte length published.
  std::atomic<uint64_t> strings_committed{0};
  std::atomic<uint32_t> strings_count{0};
  std::atomic<uint32_t> strings_dropped{0};  // names refused because the arena was full
  // Window boundaries of the schedule. `in_transition` is raised while one is
  // being published so that the launcher never classifies an event against
  // an incomplete list.
  std::atomic<uint32_t> in_transition{0};
  std::atomic<uint32_t> boundary_count{0};
  std::atomic<uint32_t> closed{0};  // process exited cleanly
  // cuda_status.hpp: pack_cuda_status(status, message id); 0 = no CUDA.
  std::atomic<uint32_t> cuda_status{0};
  Boundary boundaries[kMaxBoundaries];
  ThreadSlot threads[kMaxThreads];
  // What a short /dev/shm cost this process (the agent could not reserve the memory).
  std::atomic<uint32_t> shm_short_threads{0};  // threads that got no ring: nothing of theirs recorded
  std::atomic<uint32_t> shm_small_rings{0};    // threads that got a smaller ring than asked
  std::atomic<uint32_t> shm_short_names{0};    // names refused: no room to grow the string arena
  // Nonzero while the agent collects GPU activity (CUPTI) and publishes a
  // GpuFlushed boundary after each WindowEnd once CUPTI's buffers are flushed.
  std::atomic<uint32_t> gpu_flush{0};
  // The process's place in a distributed job, from its environment at
  // registration (RANK, LOCAL_RANK, WORLD_SIZE, as torchrun sets them; -1 =
  // unset or not a number), and its host name. `dist_known` is 0 in a
  // region whose agent did not fill them. rank and world_size change once
  // more when the process initialises its default process group (the
  // Python bootstrap tells the agent: mp.spawn passes the rank to
  // init_process_group, not through the environment); the launcher reads
  // them when it writes each window.
  uint32_t dist_known = 0;
  std::atomic<int32_t> rank{-1};
  std::atomic<int32_t> local_rank{-1};
  std::atomic<int32_t> world_size{-1};
  char host[64] = {};
  // What recording costs this process, measured by the agent on this machine
  // at start-up (agent/src/record/cost_calibration.hpp), in picoseconds; 0 = not
  // measured. The launcher charges each window's events with them.
  std::atomic<uint32_t> op_cost_ps{0};      // one operator, begin and end, torch's callback work included
  std::atomic<uint32_t> record_cost_ps{0};  // one other record (a mark, a range's push or pop, a memory event)
  // What the step rule met, for the run's summary when few or no steps
  // ended: steps ended so far (the current step's number), and how often a
  // scope that some rule would end a step at ended (kStepCandidate*).
  std::atomic<uint64_t> steps_ended{0};
  std::atomic<uint32_t> step_candidates[4] = {};
  // Set once `auto` (PTPROF_STEP=auto) chose its rule: StepRule::Kind + 1.
  std::atomic<uint32_t> auto_rule{0};
  // The window this process is in (window_word(), schedule.hpp), changed at
  // every WindowBegin and WindowEnd and at exit; its children follow the
  // copy in its session slot (ProcessSlot::reserved).
  std::atomic<uint32_t> window_state{0};
  // The pid of the ancestor whose windows this process follows (it has
  // ended no step of its own); 0: none, it runs its own schedule.
  std::atomic<int32_t> follows_pid{0};
  // What the process is, as its agent could tell (ProcessRole): written at
  // registration, before the slot is Ready, and once more in a 'spawn'
  // DataLoader worker, which only its Python code tells (role_index first,
  // then role with release: a reader that acquires role sees its index).
  // role_index: a DataLoader worker's id; -1 otherwise.
  std::atomic<uint32_t> role{0};
  std::atomic<int32_t> role_index{-1};
  // What recording cost this process's own steps (the agent's
  // step_cost_meter.hpp): the stepping thread's CPU time, each steady
  // recorded step less the steady unrecorded step before it (median, may be
  // negative), the steady unrecorded steps (median), and the operators it
  // recorded per recorded step (median); for the run's summary, next to the
  // start-up estimate. Updated at each step's end once a schedule gave both
  // kinds enough steps; pairs is written last (release) and is 0 until then.
  std::atomic<uint32_t> step_cost_pairs{0};
  std::atomic<uint32_t> step_cost_unrecorded_steps{0};
  std::atomic<uint32_t> step_cost_ops{0};
  std::atomic<int64_t> step_cost_added_ns{0};
  std::atomic<uint64_t> step_cost_unrecorded_ns{0};
};

// ProcessHeader::role. The main process, a rank and any other child are told
// apart by the launcher and the report (ppid, RANK); these need the agent.
enum class ProcessRole : uint32_t {
  Unknown = 0,
  DataLoaderWorker = 1,  // forked by a DataLoader's iterator (its worker loop)
  CompileWorker = 2,     // torch inductor's compile pool, or a process it started
};

// ProcessHeader::step_candidates, by what ended.
enum StepCandidate : uint32_t {
  kStepCandidateOptimizer = 0,   // Optimizer.step#<Name>.step
  kStepCandidateDataLoader = 1,  // enumerate(DataLoader)#<Iter>.__next__
  kStepCandidateNamed = 2,       // the scope, range or op PTPROF_STEP names
  kStepCandidateForward = 3,     // the model's outermost forward (under forward or auto)
};

// The losses the agent counts in a ProcessHeader, each with the field of the
// ledger (trace::Losses, trace.hpp) the launcher reads it into:
// X(header counter, ledger field).
#define PTPROF_HEADER_LOSSES(X)             \
  X(strings_dropped, names_refused)         \
  X(lost_threads, lost_threads)             \
  X(lost_thread_events, lost_thread_events) \
  X(shm_short_threads, shm_short_threads)   \
  X(shm_small_rings, shm_small_rings)       \
  X(shm_short_names, shm_short_names)

// The ABI is fixed: these fail to compile when a field moves.
static_assert(std::atomic<uint32_t>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free,
              "shared atomics must be lock-free to work across processes");
static_assert(sizeof(ProcessSlot) == 80 && offsetof(ProcessSlot, region) == 16);
static_assert(offsetof(SessionHeader, ring_bytes) == 16 && offsetof(SessionHeader, name) == 24 &&
              offsetof(SessionHeader, next_slot) == 88 && offsetof(SessionHeader, lost_processes) == 92 &&
              offsetof(SessionHeader, shm_short_processes) == 96 && offsetof(SessionHeader, launcher_gone) == 100 &&
              offsetof(SessionHeader, trigger_seq) == 104 && offsetof(SessionHeader, trigger_done) == 128 &&
              offsetof(SessionHeader, trigger_options) == 140 && offsetof(SessionHeader, trigger_claim) == 144 &&
              offsetof(SessionHeader, trigger_paths_left) == 148 && offsetof(SessionHeader, said_once) == 152 &&
              offsetof(SessionHeader, trigger_claimer) == 156 && offsetof(SessionHeader, slots) == 160);
static_assert(sizeof(SessionHeader) == 160 + sizeof(ProcessSlot) * kMaxProcesses + 1024 + 1024 + kTriggerPathsBytes);
static_assert(sizeof(ThreadSlot) == 64 && offsetof(ThreadSlot, name) == 8);
static_assert(sizeof(Boundary) == 24);
static_assert(offsetof(ProcessHeader, strings_offset) == 32 && offsetof(ProcessHeader, rings_offset) == 48 &&
              offsetof(ProcessHeader, cmdline) == 72 && offsetof(ProcessHeader, thread_count) == 584 &&
              offsetof(ProcessHeader, lost_thread_events) == 592 && offsetof(ProcessHeader, strings_committed) == 600 &&
              offsetof(ProcessHeader, in_transition) == 616 && offsetof(ProcessHeader, closed) == 624 &&
              offsetof(ProcessHeader, boundaries) == 632);
static_assert(offsetof(ProcessHeader, cuda_status) == 628);
static_assert(offsetof(ProcessHeader, gpu_flush) ==
                  632 + sizeof(Boundary) * kMaxBoundaries + sizeof(ThreadSlot) * kMaxThreads + 12 &&
              offsetof(ProcessHeader, dist_known) == offsetof(ProcessHeader, gpu_flush) + 4 &&
              offsetof(ProcessHeader, host) == offsetof(ProcessHeader, gpu_flush) + 20);
static_assert(offsetof(ProcessHeader, op_cost_ps) == offsetof(ProcessHeader, host) + 64 &&
              offsetof(ProcessHeader, record_cost_ps) == offsetof(ProcessHeader, op_cost_ps) + 4);
static_assert(offsetof(ProcessHeader, steps_ended) == offsetof(ProcessHeader, record_cost_ps) + 4 &&
              offsetof(ProcessHeader, auto_rule) == offsetof(ProcessHeader, steps_ended) + 8 + 16);
static_assert(sizeof(ProcessHeader) ==
              632 + sizeof(Boundary) * kMaxBoundaries + sizeof(ThreadSlot) * kMaxThreads + 16 + 80 + 8 + 8 + 16 + 48);
static_assert(offsetof(ProcessHeader, step_cost_pairs) == offsetof(ProcessHeader, role_index) + 4 &&
              offsetof(ProcessHeader, step_cost_ops) == offsetof(ProcessHeader, role_index) + 12 &&
              offsetof(ProcessHeader, step_cost_added_ns) == offsetof(ProcessHeader, role_index) + 16 &&
              offsetof(ProcessHeader, step_cost_unrecorded_ns) == offsetof(ProcessHeader, role_index) + 24);
static_assert(offsetof(ProcessHeader, window_state) == offsetof(ProcessHeader, auto_rule) + 4 &&
              offsetof(ProcessHeader, follows_pid) == offsetof(ProcessHeader, window_state) + 4 &&
              offsetof(ProcessHeader, role) == offsetof(ProcessHeader, follows_pid) + 4 &&
              offsetof(ProcessHeader, role_index) == offsetof(ProcessHeader, role) + 4);

// Where everything is in a process region. The agent writes these offsets
// into the header; the launcher accepts a region only if they are what this
// function computes from the header's ring size and thread count.
struct RegionLayout {
  uint64_t strings_offset = 0;  // the string arena, page-aligned after the header
  uint64_t strings_capacity = 0;
  uint64_t rings_offset = 0;  // ring 0's RingControl; its data follows it
  uint64_t ring_stride = 0;   // from one ring's RingControl to the next
  uint64_t total_bytes = 0;
};

constexpr uint64_t kPageBytes = 4096;

constexpr RegionLayout region_layout(uint64_t ring_bytes, uint32_t max_threads,
                                     uint64_t strings_capacity = kStringArenaBytes) {
  RegionLayout l;
  l.strings_offset = (sizeof(ProcessHeader) + kPageBytes - 1) & ~(kPageBytes - 1);
  l.strings_capacity = strings_capacity;
  l.rings_offset = l.strings_offset + l.strings_capacity;
  l.ring_stride = sizeof(RingControl) + ring_bytes;
  l.total_bytes = l.rings_offset + uint64_t(max_threads) * l.ring_stride;
  return l;
}
static_assert(region_layout(kDefaultRingBytes, kMaxThreads).rings_offset % alignof(RingControl) == 0);

// Whether a header describes a region of `mapped_bytes` laid out as
// region_layout() says (the launcher's check on what a target wrote).
inline bool layout_matches(const ProcessHeader& h, uint64_t mapped_bytes) {
  if (h.max_threads > kMaxThreads || !is_power_of_two(h.ring_bytes) || h.ring_bytes % 8 != 0) return false;
  // A ring larger than the mapping is refused before region_layout()
  // multiplies it by the thread count, where 2^63 bytes times two threads
  // would wrap round to a total that fits.
  if (h.ring_bytes > mapped_bytes) return false;
  if (h.strings_capacity < kMinStringArenaBytes || h.strings_capacity > kMaxStringArenaBytes ||
      h.strings_capacity % kPageBytes != 0)
    return false;
  const RegionLayout l = region_layout(h.ring_bytes, h.max_threads, h.strings_capacity);
  return h.strings_offset == l.strings_offset && h.strings_capacity == l.strings_capacity &&
         h.rings_offset == l.rings_offset && l.total_bytes <= mapped_bytes;
}

// A region's parts, located from its header.
inline uint8_t* string_arena(void* region, const ProcessHeader& h) {
  return static_cast<uint8_t*>(region) + h.strings_offset;
}
inline RingControl* ring_control(void* region, const ProcessHeader& h, uint32_t thread) {
  const RegionLayout l = region_layout(h.ring_bytes, h.max_threads, h.strings_capacity);
  return reinterpret_cast<RingControl*>(static_cast<uint8_t*>(region) + l.rings_offset +
                                        uint64_t(thread) * l.ring_stride);
}
inline uint8_t* ring_data(void* region, const ProcessHeader& h, uint32_t thread) {
  return reinterpret_cast<uint8_t*>(ring_control(region, h, thread)) + sizeof(RingControl);
}
// The capacity of a thread slot's ring as the launcher may trust it: what the
// slot says when that is a power of two that fits the slot, else the
// region's (which always fits).
inline uint64_t slot_ring_bytes(const ProcessHeader& h, const ThreadSlot& slot) {
  const uint64_t b = slot.ring_bytes;
  return is_power_of_two(b) && b >= 4096 && b <= h.ring_bytes ? b : h.ring_bytes;
}

// Whether a session header can be used as it is (the agent's check on the
// object PTPROF_SESSION names, which anyone could have created).
inline bool session_header_valid(const SessionHeader& s, uint64_t mapped_bytes) {
  if (mapped_bytes < sizeof(SessionHeader) || s.magic != kSessionMagic || s.version != kWireVersion) return false;
  if (s.clock_kind > uint32_t(clock::Kind::Tsc)) return false;
  if (!is_power_of_two(s.ring_bytes) || s.ring_bytes < kMinRingBytes || s.ring_bytes > kMaxRingBytes) return false;
  const void* nul = std::memchr(s.name, 0, sizeof s.name);
  return nul != nullptr && s.name[0] == '/';
}

// The shm name of a process region: the session's name and 64 random bits,
// so that no one can create it first. The agent creates it and publishes it in
// its process slot; the launcher maps it, or removes it when its process died
// registering.
constexpr size_t kRegionSessionChars = 40;  // of the session's name; "/ptprof-" and 32 hex digits
constexpr size_t kRegionRandomChars = 16;
inline void region_name(char* out, size_t size, const char* session, uint64_t random) {
  std::snprintf(out, size, "%.*s.%0*llx", int(kRegionSessionChars), session, int(kRegionRandomChars),
                static_cast<unsigned long long>(random));
}

// Whether `region` is a name region_name() makes for `session`: the session's
// name, a dot and 16 lowercase hex digits, nothing more. The launcher opens
// and unlinks no other name a slot announces (a target that dropped its
// privileges could write any name there).
inline bool is_region_of(std::string_view region, std::string_view session) {
  const std::string_view prefix = session.substr(0, kRegionSessionChars);
  if (prefix.empty() || prefix.front() != '/' || region.size() != prefix.size() + 1 + kRegionRandomChars ||
      region.substr(0, prefix.size()) != prefix || region[prefix.size()] != '.')
    return false;
  for (char c : region.substr(prefix.size() + 1))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// The run-wide warnings: every process of a run meets the same bridge cache
// and the same torch, so each says its line once per run, not once per
// process (issue 28 defect 9: with no writable cache there is no marker file
// to remember it by). The agent claims them; so does `ptprof bridge build
// --for-run`, which opens the session by name.
enum SaidOnce : uint32_t {
  kSaidNoBridgeCache = 1u << 0,     // no cache directory, or libtorch_cpu unreadable
  kSaidBridgeRefused = 1u << 1,     // the cache (or PTPROF_TORCH_BRIDGE) fails the trust check
  kSaidTorchLibraries = 1u << 2,    // not exactly one torch in the process
  kSaidPrebuiltSkipped = 1u << 3,   // a prebuilt bridge failed its check
  kSaidBuilderMissing = 1u << 4,    // the builder could not be started
  kSaidBuildFailed = 1u << 5,       // the builder's failure line
  kSaidBuiltUnusable = 1u << 6,     // built, yet the agent's check refuses it
  kSaidBridgeLoadFailed = 1u << 7,  // dlopen or the bridge's initialisation failed
};

// True for the first caller of the run to claim `bit`: that one says it.
inline bool claim_said_once(SessionHeader& s, uint32_t bit) {
  return (s.said_once.fetch_or(bit, std::memory_order_acq_rel) & bit) == 0;
}

// Environment variable through which the launcher hands the session over.
constexpr const char* kSessionEnv = "PTPROF_SESSION";

}  // namespace ptprof::wire
