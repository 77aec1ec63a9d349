// The agent's CUPTI consumer (agent/src/cupti/cupti_consumer.hpp) on its
// own, in this process, against the tests' stand-in CUPTI
// (tests/programs/fake_cupti.cpp, which logs every call) and stand-in
// driver (an empty libcuda.so.1): when it decides that CUDA can be
// recorded, that it holds CUPTI only while a window records and lets it go
// once the window's records are flushed, what it converts into the
// thread's ring, how it yields to a tool that holds CUPTI, and what a fork
// child keeps. Its window controller is a real one, on private memory.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cupti/cuda_presence.hpp"
#include "cupti/cupti_consumer.hpp"
#include "private_ring.hpp"
#include "ptprof/config.hpp"
#include "ptprof/shm_abi.hpp"
#include "record/thread_state.hpp"
#include "services_double.hpp"
#include "window/window_controller.hpp"

using namespace ptprof;
using namespace ptprof::agent;
using ptprof::agent::testing::PrivateRing;
using ptprof::agent::testing::ServicesScope;

namespace {

struct Published {
  wire::CudaStatus status = wire::CudaStatus::None;
  bool yielded = false;
  std::string message;
  int count = 0;
};
Published& published() {
  static Published p;
  return p;
}
constexpr uint32_t kMessageId = 77;
uint32_t publish(wire::CudaStatus s, bool yielded, const char* message) {
  Published& p = published();
  p = {s, yielded, message, p.count + 1};
  return kMessageId;
}

// What the stand-in CUPTI was asked, one line a call, since the last take().
class CuptiLog {
 public:
  CuptiLog()
      : path_(std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/ptprof-fake-cupti-" +
              std::to_string(getpid()) + ".log") {
    std::remove(path_.c_str());
    setenv("FAKE_CUPTI_LOG", path_.c_str(), 1);
  }
  ~CuptiLog() {
    unsetenv("FAKE_CUPTI_LOG");
    std::remove(path_.c_str());
  }
  CuptiLog(const CuptiLog&) = delete;
  CuptiLog& operator=(const CuptiLog&) = delete;
  std::vector<std::string> take() {
    std::vector<std::string> lines;
    std::ifstream in(path_);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    std::remove(path_.c_str());
    return lines;
  }

 private:
  std::string path_;
};

bool has(const std::vector<std::string>& lines, const std::string& line) {
  for (const std::string& l : lines)
    if (l == line) return true;
  return false;
}

// A consumer with its window controller and a registered thread, as the
// runtime gives it them (configure, then check_for_cuda as libraries load).
class Consumer {
 public:
  Consumer() : session_(std::make_unique<wire::SessionHeader>()), header_(std::make_unique<wire::ProcessHeader>()) {
    setenv("PTPROF_CUPTI_PATH", PTPROF_TEST_FAKE_CUPTI, 1);
    published() = {};
    config_ = *config_from_env([](const char*) -> const char* { return nullptr; });
    thread_.ring = ring_.writer();
    services_->active = true;
    services_->registered = &thread_;
    detail::tls_thread = &thread_;
    windows_.configure(config_, cupti);
    windows_.attach(*session_, slot_, *header_, clock::Kind::Monotonic);
    cupti.configure(windows_, publish, clock::Kind::Monotonic);
  }
  ~Consumer() {
    cupti.shutdown();
    forget_thread_state();
    unsetenv("PTPROF_CUPTI_PATH");
  }
  Consumer(const Consumer&) = delete;
  Consumer& operator=(const Consumer&) = delete;

  std::vector<testing::WrittenRecord> records() { return ring_.take(); }
  std::vector<uint32_t> gpu_flushed() const {
    std::vector<uint32_t> windows;
    for (uint32_t i = 0; i < header_->boundary_count.load(); ++i)
      if (header_->boundaries[i].kind == uint32_t(wire::BoundaryKind::GpuFlushed))
        windows.push_back(header_->boundaries[i].window);
    return windows;
  }
  wire::ProcessHeader& header() { return *header_; }
  testing::ServicesDouble& services() { return *services_.operator->(); }

  CuptiConsumer cupti;

 private:
  ServicesScope services_;
  Config config_;
  std::unique_ptr<wire::SessionHeader> session_;
  wire::ProcessSlot slot_{};
  std::unique_ptr<wire::ProcessHeader> header_;
  WindowController windows_;
  PrivateRing ring_;
  ThreadState thread_;
};

void load_stub_driver() {
  // Found by its soname from then on, as a system's driver is.
  REQUIRE(dlopen(PTPROF_TEST_STUB_DRIVER, RTLD_NOW | RTLD_GLOBAL) != nullptr);
}

}  // namespace

TEST_CASE("CUPTI is held only while a window records, and let go once its records are flushed", "[agent][cupti]") {
  CuptiLog log;
  Consumer c;
  if (!cuda_library_loaded()) {
    // No CUDA in the process yet: nothing is decided, at any cost.
    c.cupti.check_for_cuda(true);
    CHECK(published().count == 0);
    CHECK_FALSE(c.cupti.correlating());
  }
  load_stub_driver();
  c.cupti.check_for_cuda(true);  // a window records: CUPTI is taken now
  CHECK(published().status == wire::CudaStatus::Recording);
  CHECK(published().message.find("CUDA recorded with CUPTI from") != std::string::npos);
  CHECK(c.cupti.correlating());
  CHECK(c.header().gpu_flush.load() == 1);  // the launcher holds ended windows from now on
  std::vector<std::string> calls = log.take();
  CHECK(has(calls, "subscribe ok"));
  CHECK(has(calls, "register"));
  c.cupti.check_for_cuda(true);  // decided once
  CHECK(published().count == 1);

  // Ops' handles go to CUPTI as external correlation ids.
  c.cupti.push(42);
  c.cupti.pop();
  calls = log.take();
  CHECK(has(calls, "push 42"));
  CHECK(has(calls, "pop 42"));

  // A step's end hands completed buffers over, into the calling thread's ring.
  c.cupti.push(43);
  c.cupti.step_ending();
  c.cupti.pop();
  CHECK(has(log.take(), "flush 0"));
  const auto written = c.records();
  REQUIRE(written.size() == 2);
  CHECK(written[0].type == wire::RecordType::GpuActivity);
  CHECK(c.services().names.at(written[0].arg - 1) == "fake_gemm(float*)");  // demangled
  CHECK(written[1].type == wire::RecordType::ExternalCorrelation);
  const auto join = written[1].as<wire::ExternalCorrelationPayload>();
  CHECK(join.external_id == 43);
  CHECK(join.correlation_id == written[0].as<wire::GpuActivityPayload>().correlation_id);

  // Recording stops: no new correlations, but CUPTI is kept until the
  // window's end has flushed it (its kernels may still be running).
  c.cupti.recording_changed(false);
  CHECK_FALSE(c.cupti.correlating());
  c.cupti.step_ending();  // nothing to hand over outside windows
  calls = log.take();
  CHECK_FALSE(has(calls, "unsubscribe"));
  CHECK_FALSE(has(calls, "flush 0"));
  c.cupti.window_ended(0);
  calls = log.take();
  CHECK(has(calls, "flush 1"));  // forced
  CHECK(has(calls, "unsubscribe"));
  CHECK(c.gpu_flushed() == std::vector<uint32_t>{0});
  (void)c.records();  // the forced flush's buffer

  // The next window takes CUPTI again.
  c.cupti.recording_changed(true);
  CHECK(c.cupti.correlating());
  CHECK(has(log.take(), "subscribe ok"));
  // A window that begins before the last one's end let CUPTI go keeps it.
  c.cupti.recording_changed(false);
  c.cupti.recording_changed(true);
  CHECK_FALSE(has(log.take(), "subscribe ok"));
  CHECK(c.cupti.correlating());

  // A fork child: the parent's CUPTI session is not its own.
  c.cupti.forget_after_fork();
  CHECK_FALSE(c.cupti.correlating());
  c.cupti.window_ended(1);
  CHECK(c.gpu_flushed() == std::vector<uint32_t>{0});  // no protocol in the child's region
  c.cupti.recording_changed(true);
  CHECK_FALSE(c.cupti.correlating());
  CHECK_FALSE(has(log.take(), "subscribe ok"));
}

TEST_CASE("a CUPTI held by another tool is yielded in that window and tried again at the next", "[agent][cupti]") {
  CuptiLog log;
  load_stub_driver();
  Consumer c;
  setenv("FAKE_CUPTI_HELD", "1", 1);  // torch.profiler or nsys holds it
  c.cupti.check_for_cuda(true);
  unsetenv("FAKE_CUPTI_HELD");
  CHECK(published().status == wire::CudaStatus::CuptiTaken);
  CHECK(published().yielded);
  CHECK_FALSE(c.cupti.correlating());
  CHECK(c.header().gpu_flush.load() == 0);  // never collected: the launcher holds nothing
  // The window says why its CUDA is missing, with the status's message.
  const auto written = c.records();
  REQUIRE(written.size() == 1);
  CHECK(written[0].type == wire::RecordType::Mark);
  CHECK(written[0].arg == kMessageId);
  CHECK(has(log.take(), "subscribe busy"));

  c.cupti.recording_changed(false);
  c.cupti.window_ended(0);
  CHECK(c.gpu_flushed().empty());
  // The next window: CUPTI is free, and taken; the run remembers it yielded once.
  c.cupti.recording_changed(true);
  CHECK(c.cupti.correlating());
  CHECK(published().status == wire::CudaStatus::Recording);
  CHECK(published().yielded);
  CHECK(has(log.take(), "subscribe ok"));
  c.cupti.recording_changed(false);
  c.cupti.window_ended(1);
  CHECK(c.gpu_flushed() == std::vector<uint32_t>{1});
}
