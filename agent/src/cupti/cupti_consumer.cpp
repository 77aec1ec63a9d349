#include "cupti/cupti_consumer.hpp"

#include <cxxabi.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_map>

#include "base/log.hpp"
#include "base/real_libc.hpp"
#include "cupti/cuda_presence.hpp"
#include "record/thread_state.hpp"
#include "window/window_controller.hpp"

#if PTPROF_HAVE_CUPTI
#include "cupti/cupti_activity.hpp"
#include "cupti/cupti_graphs.hpp"
#include "cupti/cupti_library.hpp"
#include "cupti/device_descriptions.hpp"
#endif

namespace ptprof::agent {

using wire::CudaStatus;

#if PTPROF_HAVE_CUPTI

namespace {

constexpr size_t kBufferBytes = 4u << 20;
constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,    CUPTI_ACTIVITY_KIND_MEMCPY,   CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,      CUPTI_ACTIVITY_KIND_RUNTIME,  CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_OVERHEAD,
};

// Only the resource domain's graph node callbacks are enabled (and only
// while ptprof holds CUPTI): nothing here runs per op or per launch.
void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);

// CUPTI's C callbacks own the buffers between request and completion; the
// C allocator is the one both sides can hand back and forth.
void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid);

// What torch.profiler does before it stops (torch.cuda.synchronize()): work
// still queued on the device completes, so that the forced flush that
// follows hands over kernels with their end times rather than unfinished
// records. The driver's own functions, looked up in libcuda itself (neither
// is hooked, so the call is not recorded), never the runtime's: a context
// that is not current is not created (a process that loaded CUDA without
// using it stays so).
void synchronize_device() {
  void* driver = real_dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (!driver) return;
  auto current = reinterpret_cast<CUresult (*)(CUcontext*)>(dlsym(driver, "cuCtxGetCurrent"));
  auto sync = reinterpret_cast<CUresult (*)()>(dlsym(driver, "cuCtxSynchronize"));
  if (current && sync) {
    CUcontext ctx = nullptr;
    if (current(&ctx) == CUDA_SUCCESS && ctx) sync();
  }
  dlclose(driver);  // the NOLOAD reference
}

bool device_missing(CUptiResult r) {
  return r == CUPTI_ERROR_NOT_INITIALIZED || r == CUPTI_ERROR_INVALID_DEVICE || r == CUPTI_ERROR_NOT_COMPATIBLE;
}

}  // namespace

struct CuptiConsumer::Impl {
  cupti::Library lib;
  clock::Kind session_clock = clock::Kind::Monotonic;
  cupti::GpuClock clock;
  bool have_first = false;
  uint64_t first_ns = 0, first_ticks = 0;
  CUpti_SubscriberHandle subscriber = nullptr;
  // Name ids by CUPTI's name pointer (stable for the process): kernel names
  // come mangled and are demangled once each, as torch.profiler shows them.
  std::mutex names_mu;
  std::unordered_map<const char*, uint32_t> names;
  // The GPUs' descriptions, and their marks' names interned once.
  cupti::DeviceDescriptions devices;
  std::vector<uint32_t> device_marks;

  uint32_t name_id(ThreadState& t, const char* name) {
    {
      std::lock_guard lock(names_mu);
      if (auto it = names.find(name); it != names.end()) return it->second;
    }
    uint32_t id = 0;
    int status = -1;
    char* plain = name[0] == '_' && name[1] == 'Z' ? abi::__cxa_demangle(name, nullptr, nullptr, &status) : nullptr;
    id = t.intern(status == 0 && plain ? plain : name);
    std::free(plain);  // __cxa_demangle's buffer is malloc'ed
    std::lock_guard lock(names_mu);
    names.emplace(name, id);
    return id;
  }

  // A (CUPTI ns, session ticks) pair, the clock read bracketing CUPTI's.
  void sample(uint64_t& ns, uint64_t& ticks) const {
    const clock::Kind k = session_clock;
    uint64_t best = ~0ull;
    for (int i = 0; i < 5; ++i) {
      uint64_t a = clock::ticks_ordered(k), c = 0;
      lib.api.get_timestamp(&c);
      uint64_t b = clock::ticks_ordered(k);
      if (b - a < best) {
        best = b - a;
        ns = c;
        ticks = a + (b - a) / 2;
      }
    }
  }
  // Fits ticks per CUPTI ns between the first sample and a new one (5 ms
  // apart at least: the first window waits for that once).
  void calibrate() {
    uint64_t ns = 0, ticks = 0;
    if (!have_first) {
      sample(first_ns, first_ticks);
      have_first = true;
    }
    do {
      sample(ns, ticks);
    } while (ns - first_ns < 5'000'000);
    clock.ticks_per_ns = double(ticks - first_ticks) / double(ns - first_ns);
    clock.anchor_ns = ns;
    clock.anchor_ticks = ticks;
  }
};

namespace {

struct InternContext {
  CuptiConsumer::Impl* impl;
  ThreadState* thread;
};

uint32_t intern_on_thread(void* ctx, const char* name) {
  auto* c = static_cast<InternContext*>(ctx);
  return c->impl->name_id(*c->thread, name);
}

// A name in a buffer of the caller's: the thread's caches check the text, the
// consumer's map (keyed by CUPTI's pointers) is not asked.
uint32_t intern_transient_on_thread(void* ctx, const char* name) {
  return static_cast<InternContext*>(ctx)->thread->intern(name);
}

// Records CUPTI dropped (its buffers full) are GPU work the window lacks: the
// report says so, as a CUDA note in the window (cuda_status.hpp).
void note_dropped(CuptiConsumer::Impl& m, ThreadState& t, CUcontext context, uint32_t stream) {
  size_t dropped = 0;
  if (!m.lib.api.dropped_records || m.lib.api.dropped_records(context, stream, &dropped) != CUPTI_SUCCESS ||
      dropped == 0)
    return;
  char note[160];
  std::snprintf(note, sizeof note,
                "%.*sCUPTI dropped %zu activity records (its buffers were full): GPU work is missing from this window",
                int(wire::kCudaNotePrefix.size()), wire::kCudaNotePrefix.data(), dropped);
  const bool was_busy = t.busy;
  t.busy = true;
  if (const uint32_t id = t.intern(note)) t.emit_instant(wire::RecordType::Mark, id, t.now());
  t.busy = was_busy;
}

// The consumer that subscribed, for CUPTI's buffer callbacks, which carry no
// user data: set before they are registered (enable_locked); the process's
// one consumer lives as long as the process (the runtime's NoDestructor).
CuptiConsumer* g_subscribed = nullptr;

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  if (g_subscribed) g_subscribed->convert(buffer, valid, context, stream);
  std::free(buffer);
}

void CUPTIAPI on_callback(void* consumer, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && data) static_cast<CuptiConsumer*>(consumer)->resource_callback(cbid, data);
}

}  // namespace

void CuptiConsumer::resource_callback(uint32_t cbid, const void* data) {
  Impl* m = impl_.get();
  // Inside a CUDA call the agent hooks (the thread is busy, between its
  // records): the ring is free, as for a buffer handed over there.
  ThreadState* t = detail::tls_thread ? detail::tls_thread : thread_state();
  if (!m || !t) return;
  const OpLevel* op = t->innermost_op();
  const cupti::GraphIdFns ids{m->lib.api.graph_node_id, m->lib.api.graph_id};
  (void)cupti::graph_node_record(CUpti_CallbackId(cbid), *static_cast<const CUpti_ResourceData*>(data), ids,
                                 op ? op->handle : 0, t->now(), t->ring);
}

void CuptiConsumer::convert(uint8_t* buffer, size_t valid, void* context, uint32_t stream) {
  Impl* m = impl_.get();
  // CUPTI may hand a buffer over from inside a call the agent hooks (the
  // thread is then busy): its ring is still free, nothing is mid-write.
  ThreadState* t = detail::tls_thread ? detail::tls_thread : thread_state();
  if (!m || !t) return;
  note_dropped(*m, *t, static_cast<CUcontext>(context), stream);
  if (valid == 0) return;
  const bool was_busy = t->busy;
  cupti::ActivityOutput out;
  out.ring = &t->ring;
  InternContext ctx{m, t};
  out.intern = intern_on_thread;
  out.intern_transient = intern_transient_on_thread;
  out.intern_ctx = &ctx;
  out.now_ticks = t->now();
  out.agent_calls = m->devices.agent_calls();
  out.agent_call_count = m->devices.agent_call_count();
  t->busy = true;  // nothing the conversion calls records itself
  (void)cupti::convert_buffer(buffer, valid, m->lib.api.get_next_record, m->lib.api.callback_name, m->clock, out);
  t->busy = was_busy;
}

void CuptiConsumer::decide(bool recording) {
  std::lock_guard lock(mu_);
  recording_ = recording;
  // The driver first: without it CUPTI has nothing to report.
  if (!real_dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD) &&
      !real_dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
    set_status(CudaStatus::NoDriver,
               "ptprof: CUDA not recorded: no NVIDIA driver (libcuda.so.1 not found); CPU profiling carries on");
    if (recording_) note_in_window();
    return;
  }
  const std::vector<std::string> loaded = loaded_libraries();
  const char* chosen = std::getenv("PTPROF_CUPTI_PATH");
  Result<cupti::Library> lib = cupti::open_cupti(cupti::cupti_candidates(chosen, loaded));
  if (!lib) {
    std::string why = lib.error();
    if (why.empty()) why = chosen && *chosen ? "no such file" : "none loaded, beside libcudart or in /usr/local/cuda";
    if (chosen && *chosen) why = std::string("PTPROF_CUPTI_PATH=") + chosen + ": " + why;
    set_status(CudaStatus::NoCupti, ("ptprof: CUDA not recorded: no CUPTI library (" + why +
                                     "; set PTPROF_CUPTI_PATH); CPU profiling carries on")
                                        .c_str());
    if (recording_) note_in_window();
    return;
  }
  auto impl = std::make_unique<Impl>();
  impl->lib = std::move(*lib);
  impl->session_clock = clock_;
  log(Level::Debug, "CUPTI from %s", impl->lib.path.c_str());
  impl_ = std::move(impl);
  usable_ = true;
  if (recording_) enable_locked();
  if (recording_ && status_ != CudaStatus::Recording) note_in_window();
  if (recording_) note_devices_locked();
}

void CuptiConsumer::note_devices_locked() {
  if (!enabled_ || devices_noted_ || !impl_) return;
  Impl& m = *impl_;
  m.devices.ask(m.lib.api.get_timestamp);  // when the window began before cuInit; CUPTI records
  if (m.devices.state() == cupti::DeviceDescriptions::State::Unasked) return;  // a later step end asks again
  ThreadState* t = thread_state();
  if (!t) return;  // inside the agent: a step end of this window tries again
  if (m.device_marks.empty())
    for (const std::string& json : m.devices.json()) {
      const std::string name = std::string(wire::kCudaDevicePrefix) + json;
      if (const uint32_t id = t->intern(name.c_str())) m.device_marks.push_back(id);
    }
  const uint64_t now = t->now();
  for (uint32_t id : m.device_marks) t->emit_instant(wire::RecordType::Mark, id, now);
  devices_noted_ = true;
}

void CuptiConsumer::enable_locked() {
  if (enabled_) {
    // A window began before window_ended let CUPTI go after the last one.
    correlating_.store(true, std::memory_order_release);
    return;
  }
  if (!usable_) return;
  Impl& m = *impl_;
  const cupti::Api& api = m.lib.api;
  g_subscribed = this;
  CUptiResult r = api.subscribe(&m.subscriber, on_callback, this);
  if (r != CUPTI_SUCCESS) {
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
      set_status(CudaStatus::CuptiTaken,
                 "ptprof: CUDA not recorded in this window: CUPTI is held by another tool (torch.profiler, nsys); "
                 "ptprof yields and tries again at the next window");
    } else {
      set_status(device_missing(r) ? CudaStatus::NoGpu : CudaStatus::CuptiFailed,
                 ("ptprof: CUDA not recorded: CUPTI (" + m.lib.path +
                  ") refused to start: cuptiSubscribe: " + cupti::result_text(api, r) + "; CPU profiling carries on")
                     .c_str());
    }
    return;
  }
  // Before CUPTI records driver calls: the questions leave no trace.
  m.devices.ask(nullptr);
  r = api.register_callbacks(buffer_requested, buffer_completed);
  size_t on = 0;
  for (; r == CUPTI_SUCCESS && on < std::size(kKinds); ++on) {
    r = api.enable(kKinds[on]);
    if (r != CUPTI_SUCCESS) break;
  }
  if (r != CUPTI_SUCCESS) {
    for (size_t i = 0; i < on; ++i) api.disable(kKinds[i]);
    api.unsubscribe(m.subscriber);
    m.subscriber = nullptr;
    const bool no_gpu = device_missing(r);
    const std::string detail = cupti::result_text(api, r);
    const std::string line =
        no_gpu ? "ptprof: CUDA not recorded: no usable GPU (CUPTI: " + detail + "); CPU profiling carries on"
               : "ptprof: CUDA not recorded: CUPTI (" + m.lib.path + "): " + detail + "; CPU profiling carries on";
    set_status(no_gpu ? CudaStatus::NoGpu : CudaStatus::CuptiFailed, line.c_str());
    if (no_gpu) usable_ = false;  // no device now, none later
    return;
  }
  enable_graph_callbacks();
  m.calibrate();
  enabled_ = true;
  correlating_.store(true, std::memory_order_release);
  // From now on the launcher holds each ended window until window_ended has
  // flushed CUPTI for it (docs/design/gpu.md, CUDA activity). Never lowered:
  // the launcher keeps a GPU record whose correlation has not arrived only
  // while it is raised, and the window's last records are drained after
  // GpuFlushed is published.
  if (!flush_protocol_) {
    flush_protocol_ = true;
    windows_->set_gpu_flush_protocol(true);
  }
  if (status_ != CudaStatus::Recording)
    set_status(CudaStatus::Recording, ("ptprof: CUDA recorded with CUPTI from " + m.lib.path).c_str());
}

void CuptiConsumer::enable_graph_callbacks() {
  Impl& m = *impl_;
  const cupti::Api& api = m.lib.api;
  if (!api.enable_callback || !api.graph_node_id) {
    log(Level::Debug, "CUPTI lacks the graph node callbacks: graph replays show as captured outside the window");
    return;
  }
  // Unsubscribing turns them off with the rest.
  for (CUpti_CallbackId cbid : cupti::kGraphCallbacks) {
    const CUptiResult r = api.enable_callback(1, m.subscriber, CUPTI_CB_DOMAIN_RESOURCE, cbid);
    if (r != CUPTI_SUCCESS) log(Level::Debug, "cuptiEnableCallback(resource, %u): %d", unsigned(cbid), int(r));
  }
}

void CuptiConsumer::disable_locked(bool flushed) {
  if (!enabled_) return;
  Impl& m = *impl_;
  correlating_.store(false, std::memory_order_relaxed);
  if (!flushed) m.lib.api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (CUpti_ActivityKind k : kKinds) m.lib.api.disable(k);
  m.lib.api.unsubscribe(m.subscriber);
  m.subscriber = nullptr;
  enabled_ = false;
}

void CuptiConsumer::flush() {
  std::lock_guard lock(mu_);
  if (enabled_) impl_->lib.api.flush_all(0);
}

void CuptiConsumer::window_ended(uint32_t window) {
  bool collecting = false;
  {
    std::lock_guard lock(mu_);
    devices_noted_ = false;  // the next window (begun already, when they abut) marks them again
    if (!flush_protocol_) return;
    collecting = enabled_;
  }
  // Outside mu_: a step boundary on another thread (recording_changed) must
  // not wait for the device.
  if (collecting) synchronize_device();
  {
    std::lock_guard lock(mu_);
    if (enabled_) {
      // Completed records are kept (cupti_activity.cpp); after the
      // synchronization that is all of the window's work.
      impl_->lib.api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
      if (!recording_) disable_locked(/*flushed=*/true);
    }
  }
  // Every window ended while the protocol is raised gets its GpuFlushed,
  // also one CUPTI was yielded in (else the launcher would wait out the
  // grace period). Takes step_mu_: never called with it held, nor with mu_
  // (recording_changed takes mu_ under the step lock).
  windows_->gpu_flushed(window);
}

void CuptiConsumer::push(uint64_t handle) {
  if (impl_) impl_->lib.api.push_external(cupti::kExternalKind, handle);
}

void CuptiConsumer::pop() {
  uint64_t last = 0;
  if (impl_) impl_->lib.api.pop_external(cupti::kExternalKind, &last);
}

#else  // !PTPROF_HAVE_CUPTI

struct CuptiConsumer::Impl {};

void CuptiConsumer::convert(uint8_t*, size_t, void*, uint32_t) {}
void CuptiConsumer::resource_callback(uint32_t, const void*) {}
void CuptiConsumer::enable_graph_callbacks() {}
void CuptiConsumer::decide(bool recording) {
  std::lock_guard lock(mu_);
  recording_ = recording;
  set_status(CudaStatus::NotBuilt, "ptprof: CUDA not recorded: this ptprof was built without CUPTI's headers");
  if (recording_) note_in_window();
}
void CuptiConsumer::enable_locked() {}
void CuptiConsumer::note_devices_locked() {}
void CuptiConsumer::disable_locked(bool) {}
void CuptiConsumer::flush() {}
void CuptiConsumer::window_ended(uint32_t) {}
void CuptiConsumer::push(uint64_t) {}
void CuptiConsumer::pop() {}

#endif

CuptiConsumer::CuptiConsumer() = default;
CuptiConsumer::~CuptiConsumer() = default;

void CuptiConsumer::configure(WindowController& windows, StatusSink status, clock::Kind clock) {
  windows_ = &windows;
  status_sink_ = status;
  clock_ = clock;
}

void CuptiConsumer::step_ending() {
  if (!correlating()) return;
  flush();
  std::lock_guard lock(mu_);
  note_devices_locked();  // when the window's start came before cuInit
}

void CuptiConsumer::check_for_cuda(bool recording) {
  if (checked_.load(std::memory_order_acquire)) return;
  if (!cuda_library_loaded()) return;
  if (checked_.exchange(true, std::memory_order_acq_rel)) return;
  decide(recording);
}

void CuptiConsumer::recording_changed(bool on) {
  std::lock_guard lock(mu_);
  recording_ = on;
  if (!checked_.load(std::memory_order_acquire)) return;
  if (on) {
    enable_locked();
    if (status_ != CudaStatus::Recording && status_ != CudaStatus::None) note_in_window();
    devices_noted_ = false;
    note_devices_locked();
  } else {
    // No new op correlations; CUPTI itself is let go by window_ended, after
    // the window's work has completed and been flushed (the step lock is
    // held here, and a device synchronization has no place under it).
    correlating_.store(false, std::memory_order_relaxed);
  }
}

void CuptiConsumer::shutdown() {
  std::lock_guard lock(mu_);
  disable_locked();
}

void CuptiConsumer::forget_after_fork() {
  // The child's CUDA state is the parent's copy, unusable; CUPTI stays off.
  correlating_.store(false, std::memory_order_relaxed);
  enabled_ = false;
  usable_ = false;
  flush_protocol_ = false;  // the child's region starts without it
}

void CuptiConsumer::set_status(CudaStatus s, const char* message) {
  const bool changed = s != status_;
  status_ = s;
  yielded_ |= s == CudaStatus::CuptiTaken;
  message_id_ = status_sink_ ? status_sink_(s, yielded_, message) : 0;
  // The launcher says it in the run's summary; the agent only at info level.
  if (changed) log(Level::Info, "%s", message);
}

void CuptiConsumer::note_in_window() {
  if (!message_id_) return;
  if (ThreadState* t = thread_state()) t->emit_instant(wire::RecordType::Mark, message_id_, t->now());
}

}  // namespace ptprof::agent
