// The agent's window controller (agent/src/window/window_controller.hpp) on
// its own: each way a window opens and ends (the run as one window, a
// schedule, cudaProfilerApi capture ranges, the end of the process, a fork
// child), what it publishes for the launcher (boundaries, the window word,
// the step count), and every switch that follows a window (recording, the
// torch bridge's mode, memory events, the GPU side through its
// WindowListener, the Step records). The schedule's decisions themselves
// are tested in test_step_transition.cpp; here, that they are applied.
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "private_ring.hpp"
#include "ptprof/bridge_api.h"
#include "ptprof/config.hpp"
#include "ptprof/shm_abi.hpp"
#include "ptprof/slot_window.hpp"
#include "record/thread_state.hpp"
#include "services_double.hpp"
#include "window/window_controller.hpp"

using namespace ptprof;
using namespace ptprof::agent;
using ptprof::agent::testing::PrivateRing;
using ptprof::agent::testing::ServicesScope;
using Calls = std::vector<std::string>;
using Env = std::map<std::string, std::string>;

namespace {

// The GPU side as the controller sees it, writing down what it is told.
class GpuSide final : public WindowListener {
 public:
  void recording_changed(bool on) override { calls.push_back(on ? "recording on" : "recording off"); }
  void step_ending() override { calls.push_back("step ending"); }
  void window_ended(uint32_t window) override {
    calls.push_back("window ended " + std::to_string(window));
    if (answer) windows->gpu_flushed(window);
  }

  Calls calls;
  WindowController* windows = nullptr;
  bool answer = false;  // flushes and says so, as the CUPTI consumer under the GPU flush protocol
};

std::vector<int>& bridge_modes() {
  static std::vector<int> modes;
  return modes;
}
void bridge_switch(int mode) { bridge_modes().push_back(mode); }

// One process's controller with its session objects in private memory and
// a registered thread whose ring takes the Step records.
class Process {
 public:
  explicit Process(const Env& env)
      : session_(std::make_unique<wire::SessionHeader>()),
        slot_(std::make_unique<wire::ProcessSlot>()),
        header_(std::make_unique<wire::ProcessHeader>()) {
    Result<Config> c = config_from_env([&env](const char* name) -> const char* {
      auto it = env.find(name);
      return it == env.end() ? nullptr : it->second.c_str();
    });
    REQUIRE(c);
    config_ = *c;
    thread_.ring = ring_.writer();
    services_->active = true;
    services_->registered = &thread_;
    detail::tls_thread = &thread_;
    bridge_modes().clear();
    windows.configure(config_, gpu);
    windows.attach(*session_, *slot_, *header_, clock::Kind::Monotonic);
    gpu.windows = &windows;
  }
  ~Process() { forget_thread_state(); }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // What was published since the last call, as "begin 0@1" (WindowBegin of
  // window 0 at step 1), "end 0@3", "flushed 0@3".
  Calls boundaries() {
    Calls out;
    const uint32_t n = header_->boundary_count.load();
    for (; seen_ < n; ++seen_) {
      const wire::Boundary& b = header_->boundaries[seen_ % wire::kMaxBoundaries];
      const char* kind = b.kind == uint32_t(wire::BoundaryKind::WindowBegin) ? "begin "
                         : b.kind == uint32_t(wire::BoundaryKind::WindowEnd) ? "end "
                                                                             : "flushed ";
      out.push_back(kind + std::to_string(b.window) + "@" + std::to_string(b.step));
    }
    return out;
  }
  // The steps whose Step record the thread wrote since the last call.
  std::vector<uint32_t> step_records() {
    std::vector<uint32_t> steps;
    for (const auto& r : ring_.take())
      if (r.type == wire::RecordType::Step) steps.push_back(r.arg);
    return steps;
  }
  Calls take_calls() { return std::exchange(gpu.calls, {}); }
  uint32_t window_word() { return slot_window_word(*slot_).load(); }
  wire::ProcessHeader& header() { return *header_; }

  GpuSide gpu;
  WindowController windows;

 private:
  ServicesScope services_;
  Config config_;
  std::unique_ptr<wire::SessionHeader> session_;
  std::unique_ptr<wire::ProcessSlot> slot_;
  std::unique_ptr<wire::ProcessHeader> header_;
  PrivateRing ring_;
  ThreadState thread_;
  uint32_t seen_ = 0;
};

}  // namespace

TEST_CASE("without a schedule one window records the whole run, ended with the process", "[agent][windows]") {
  Process p(Env{});
  p.windows.begin();
  // Open from the region's start (tick 0), recording, a Step record for step 0.
  CHECK(p.boundaries() == Calls{"begin 0@0"});
  CHECK(p.header().boundaries[0].ticks == 0);
  CHECK(p.windows.recording());
  CHECK(p.take_calls() == Calls{"recording on"});
  CHECK(p.step_records() == std::vector<uint32_t>{0});
  CHECK(p.window_word() == window_word(WindowState{0, true}));
  for (int i = 0; i < 3; ++i) p.windows.end_step();
  CHECK(p.boundaries().empty());
  CHECK(p.windows.current_step() == 3);
  CHECK(p.header().steps_ended.load() == 3);
  CHECK(p.step_records() == std::vector<uint32_t>{1, 2, 3});
  CHECK(p.take_calls() == Calls{"step ending", "step ending", "step ending"});
  // At exit the open window ends with the process (the launcher ends it
  // where the region closes: no boundary), after the GPU side flushed it.
  p.windows.stop();
  CHECK(p.boundaries().empty());
  CHECK(p.take_calls() == Calls{"window ended 0"});
  // The children that follow this process end its window with it.
  CHECK(p.window_word() == window_word(WindowState{1, false}));
}

TEST_CASE("a schedule records from its warmup, windows its active steps, and repeats", "[agent][windows]") {
  Process p(Env{{"PTPROF_SCHEDULE", "wait=1,warmup=1,active=2,repeat=2"}});
  p.windows.begin();
  CHECK(p.boundaries().empty());
  CHECK_FALSE(p.windows.recording());
  CHECK(p.take_calls().empty());
  CHECK(p.step_records().empty());

  p.windows.end_step();  // step 1: warmup, recorded but outside any window
  CHECK(p.windows.recording());
  CHECK(p.boundaries().empty());
  CHECK(p.take_calls() == Calls{"step ending", "recording on"});
  CHECK(p.step_records() == std::vector<uint32_t>{1});

  p.windows.end_step();  // step 2: active
  CHECK(p.boundaries() == Calls{"begin 0@2"});
  CHECK(p.window_word() == window_word(WindowState{0, true}));
  p.windows.end_step();  // step 3: active, the window's last
  CHECK(p.boundaries().empty());
  CHECK(p.take_calls() == Calls{"step ending", "step ending"});

  p.windows.end_step();  // step 4: wait; the window ends where step 3 does
  CHECK(p.boundaries() == Calls{"end 0@3"});
  CHECK_FALSE(p.windows.recording());
  // The GPU side hears recording stop under the step lock, the window's end after it.
  CHECK(p.take_calls() == Calls{"step ending", "recording off", "window ended 0"});
  CHECK(p.window_word() == window_word(WindowState{1, false}));
  CHECK(p.step_records() == std::vector<uint32_t>{2, 3});

  // The second cycle: window 1 over steps 6 and 7.
  for (int i = 0; i < 4; ++i) p.windows.end_step();
  CHECK(p.boundaries() == Calls{"begin 1@6", "end 1@7"});
  // Then never again.
  for (int i = 0; i < 8; ++i) p.windows.end_step();
  CHECK(p.boundaries().empty());
  CHECK_FALSE(p.windows.recording());
  p.windows.stop();
  CHECK(p.boundaries().empty());  // no window open at the end
}

TEST_CASE("under the GPU flush protocol each ended window gets its GpuFlushed", "[agent][windows]") {
  Process p(Env{{"PTPROF_SCHEDULE", "wait=1,active=1"}});
  p.windows.begin();
  p.gpu.answer = true;
  p.windows.set_gpu_flush_protocol(true);
  CHECK(p.header().gpu_flush.load() == 1);
  p.windows.end_step();  // window 0: step 1
  p.windows.end_step();  // wait
  CHECK(p.boundaries() == Calls{"begin 0@1", "end 0@1", "flushed 0@2"});
  p.windows.end_step();  // window 1: step 3, still open at exit
  p.windows.stop();
  CHECK(p.boundaries() == Calls{"begin 1@3", "flushed 1@3"});
}

TEST_CASE("cudaProfilerApi: capture ranges are the steps, nothing else moves them", "[agent][windows]") {
  Process p(Env{{"PTPROF_STEP", "cudaProfilerApi"}});
  p.windows.begin();
  CHECK_FALSE(p.windows.recording());  // nothing before the first Start
  CHECK(p.boundaries().empty());
  p.windows.end_step();  // ignored: ptprof.step() or a scope ends no step here
  CHECK(p.take_calls().empty());
  CHECK(p.windows.current_step() == 0);

  p.windows.cuda_profiler_api(true);
  CHECK(p.windows.recording());
  CHECK(p.boundaries() == Calls{"begin 0@0"});
  CHECK(p.take_calls() == Calls{"step ending", "recording on"});
  p.windows.cuda_profiler_api(false);
  CHECK_FALSE(p.windows.recording());
  CHECK(p.boundaries() == Calls{"end 0@0"});
  CHECK(p.take_calls() == Calls{"step ending", "recording off", "window ended 0"});
  p.windows.cuda_profiler_api(false);  // a Stop without a Start: nothing
  CHECK(p.boundaries().empty());

  p.windows.cuda_profiler_api(true);  // the second range: step 1, window 1
  CHECK(p.windows.recording());
  CHECK(p.windows.current_step() == 1);
  CHECK(p.boundaries() == Calls{"begin 1@1"});
  p.windows.stop();
  CHECK(p.boundaries().empty());
  CHECK(p.take_calls().back() == "window ended 1");
}

TEST_CASE("the torch bridge's mode follows the window and its options", "[agent][windows]") {
  Process p(
      {{"PTPROF_SCHEDULE", "wait=1,active=1,repeat=1"}, {"PTPROF_RECORD_SHAPES", "1"}, {"PTPROF_PROFILE_MEMORY", "1"}});
  p.windows.begin();
  p.windows.install_bridge_switch(bridge_switch);
  // Outside windows only the user scopes, where a step may end.
  CHECK(bridge_modes() == std::vector<int>{PTPROF_BRIDGE_SCOPES});
  CHECK_FALSE(p.windows.memory_recording());
  p.windows.end_step();
  CHECK(bridge_modes().back() == (PTPROF_BRIDGE_OPS | PTPROF_BRIDGE_SHAPES | PTPROF_BRIDGE_MEMORY));
  CHECK(p.windows.memory_recording());
  p.windows.end_step();
  CHECK(bridge_modes().back() == PTPROF_BRIDGE_SCOPES);
  CHECK_FALSE(p.windows.memory_recording());
  // The Python bootstrap reports the step ends itself: nothing registered outside windows.
  p.windows.set_scopes_wanted(false);
  CHECK(bridge_modes().back() == 0);
  const size_t switches = bridge_modes().size();
  p.windows.end_step();  // the schedule is over: the mode is unchanged, the switch not called
  CHECK(bridge_modes().size() == switches);
}

TEST_CASE("a bridge loaded during step 0 restarts the step it records", "[agent][windows]") {
  Process p(Env{});
  p.windows.begin();
  CHECK(p.step_records() == std::vector<uint32_t>{0});
  p.windows.install_bridge_switch(bridge_switch);
  CHECK(bridge_modes() == std::vector<int>{PTPROF_BRIDGE_OPS});
  // No operator ran before torch was loaded: step 0 starts again here.
  CHECK(p.step_records() == std::vector<uint32_t>{0});
  p.windows.stop();
}

TEST_CASE("only steps that change nothing but the step's number are folded", "[agent][windows]") {
  Process p(Env{{"PTPROF_SCHEDULE", "wait=10,active=1,repeat=1"}});
  p.windows.begin();
  // Steps 1..9 begin with nothing to record; the last 3 before the window
  // (the meter's) are reported one by one.
  CHECK(p.windows.foldable_steps(32, 3) == 6);
  CHECK(p.windows.foldable_steps(4, 3) == 4);
  p.windows.fold_steps(6);
  CHECK(p.windows.current_step() == 6);
  CHECK(p.header().steps_ended.load() == 6);
  CHECK(p.boundaries().empty());
  CHECK(p.windows.foldable_steps(32, 3) == 0);  // the end after a folded call is reported alone
  CHECK(p.windows.foldable_steps(32, 3) == 0);  // steps 7..9 are the meter's
  p.windows.end_step();
  p.windows.end_step();
  p.windows.end_step();
  p.windows.end_step();  // step 10: the window
  CHECK(p.boundaries() == Calls{"begin 0@10"});
  CHECK(p.windows.foldable_steps(32, 3) == 0);  // none in a window
  p.windows.end_step();
  CHECK(p.boundaries() == Calls{"end 0@10"});
  CHECK(p.windows.foldable_steps(32, 3) == 32);  // the schedule has finished
}

TEST_CASE("a fork child goes on in the window open at the fork, from its region's start", "[agent][windows]") {
  Process p(Env{});
  p.windows.begin();
  p.windows.end_step();
  CHECK(p.boundaries() == Calls{"begin 0@0"});
  // The child's region: a new header, the same controller state (as fork copies it).
  auto child = std::make_unique<wire::ProcessHeader>();
  wire::ProcessHeader& child_header = *child;
  auto session = std::make_unique<wire::SessionHeader>();
  wire::ProcessSlot slot{};
  p.windows.attach(*session, slot, child_header, clock::Kind::Monotonic);
  p.windows.follow(nullptr);
  p.windows.continue_in_child();
  REQUIRE(child_header.boundary_count.load() == 1);
  CHECK(child_header.boundaries[0].kind == uint32_t(wire::BoundaryKind::WindowBegin));
  CHECK(child_header.boundaries[0].ticks == 0);
  CHECK(child_header.boundaries[0].window == 0);
  CHECK(slot_window_word(slot).load() == window_word(WindowState{0, true}));
  CHECK(p.windows.recording());
  p.windows.stop();
  CHECK(p.take_calls().back() == "window ended 0");
}
