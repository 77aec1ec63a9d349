// Fuzz target: a process region of arbitrary contents, as the launcher finds
// it in shared memory written by the target (region_input.hpp gives the
// input format). The region goes through the launcher's own path: map_region
// validates its header, ProcessCollector reads its string arena, schedule
// boundaries, thread table and rings and writes window files, or, with
// kThroughSession, Collector finds it through a session's process table.
// Whatever a target wrote, the launcher must neither crash nor hang nor read
// outside the region, and every file it writes must read back with the
// events it counted.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "collect/collector.hpp"
#include "collect/process_collector.hpp"
#include "collect/session.hpp"
#include "collect/window_sink.hpp"
#include "ptprof/analysis/trace_file.hpp"
#include "region_input.hpp"

namespace {

using namespace ptprof;
namespace fs = std::filesystem;

void require(bool ok) {
  if (!ok) std::abort();
}

// Window files go to a private directory; each is read back when written.
class CheckingSink final : public launcher::WindowSink {
 public:
  Result<std::unique_ptr<format::TraceSink>> open(const std::string& path, const trace::Header& header) override {
    auto w = format::TraceWriter::create(path, header);
    if (!w) return Status::error(w.error());
    return std::unique_ptr<format::TraceSink>(std::move(*w));
  }
  void window_written(const launcher::WindowFile& f) override {
    std::vector<std::string> warnings;
    auto t = format::read_trace(f.path, &warnings);
    require(t.ok());
    require(warnings.empty());
    require(t->events.size() == f.events);
    uint64_t dropped = 0;
    for (const auto& th : t->threads) dropped += th.dropped;
    require(dropped == f.dropped);
  }
};

// The name an agent of `session` would give its region.
std::string region_name_of(const std::string& session) {
  char name[sizeof(wire::ProcessSlot::region)];
  wire::region_name(name, sizeof name, session.c_str(), uint64_t(::getpid()));
  return name;
}

// The fuzz region as a shared-memory object, as an agent would create it.
std::string create_region(const fuzz::RegionInput& in, const std::string& name) {
  ::shm_unlink(name.c_str());
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  require(fd >= 0);
  require(::ftruncate(fd, off_t(fuzz::kRegionBytes)) == 0);
  void* p = ::mmap(nullptr, fuzz::kRegionBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  require(p != MAP_FAILED);
  auto* base = static_cast<uint8_t*>(p);
  for (const fuzz::Segment& s : in.segments) {
    const uint64_t at = s.offset % fuzz::kRegionBytes;
    std::memcpy(base + at, s.bytes, std::min<uint64_t>(s.length, fuzz::kRegionBytes - at));
  }
  auto& header = *reinterpret_cast<wire::ProcessHeader*>(base);
  fuzz::cap_arena(header);
  if (!(in.flags & fuzz::kRawLayout)) fuzz::repair_layout(header);
  ::munmap(p, fuzz::kRegionBytes);
  return name;
}

void through_process_collector(const std::string& session, const fuzz::RegionInput& in,
                               const launcher::CollectorOptions& opts, const clock::Converter& conv,
                               launcher::WindowSink& sink) {
  const std::string region = create_region(in, region_name_of(session));
  auto mapping = launcher::map_region(region.c_str(), session);
  ::shm_unlink(region.c_str());  // when map_region refused it before removing it
  if (!mapping) return;          // refused: the validation did its job
  launcher::ProcessCollector pc(std::move(*mapping), launcher::FileStem{"fuzz", 1, 0}, opts, conv, sink);
  if (in.flags & fuzz::kTwoRounds) {
    pc.drain(in.horizon);
    pc.finish_ready_windows();
  }
  pc.finish();
  (void)pc.losses();
  (void)pc.dropped();
}

void through_session(const fuzz::RegionInput& in, const launcher::CollectorOptions& opts, clock::Kind kind,
                     launcher::WindowSink& sink) {
  auto session = launcher::Session::create(wire::kDefaultRingBytes, kind);
  require(session.ok());
  const std::string region = create_region(in, region_name_of((*session)->name()));
  wire::SessionHeader* h = (*session)->header();
  // The region in slot 0; the horizon's bytes say how many more slots were
  // claimed and in which state the process left them.
  wire::ProcessSlot& slot = h->slots[0];
  slot.pid = ::getpid();
  std::snprintf(slot.region, sizeof slot.region, "%s", region.c_str());
  slot.state.store(uint32_t(wire::SlotState::Ready));
  const uint32_t claimed = 1 + uint32_t(in.horizon & 3);
  for (uint32_t i = 1; i < claimed; ++i) h->slots[i].state.store(uint32_t((in.horizon >> (8 * i)) & 3));
  h->next_slot.store(claimed);
  launcher::Collector collector(**session, opts, kind, sink);
  collector.poll();
  collector.finish_all();
  (void)collector.totals();
  ::shm_unlink(region.c_str());  // when the collector refused it
}

// Window files go to a private directory, emptied after each input and
// removed when the fuzzer exits.
class WorkDir {
 public:
  WorkDir() {
    spdlog::set_level(spdlog::level::off);
    std::string tmpl = (fs::temp_directory_path() / "ptprof-fuzz-XXXXXX").string();
    require(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~WorkDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  const fs::path& path() const { return path_; }
  void empty() const {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(path_, ec)) fs::remove(e.path(), ec);
  }

 private:
  fs::path path_;
};

}  // namespace

// libFuzzer's entry point: its name is fixed.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {  // NOLINT(readability-identifier-naming)
  static const WorkDir kWorkDir;

  const fuzz::RegionInput in = fuzz::parse_region_input(data, size);

  launcher::CollectorOptions opts;
  opts.output_dir = kWorkDir.path().string();
  opts.host = "fuzz";
  opts.grace = std::chrono::milliseconds(0);
  const clock::Kind kind = (in.flags & fuzz::kTscClock) ? clock::Kind::Tsc : clock::Kind::Monotonic;
  const clock::Converter conv(kind);
  CheckingSink sink;
  if (in.flags & fuzz::kThroughSession)
    through_session(in, opts, kind, sink);
  else
    through_process_collector("/ptprof-fuzz-" + std::to_string(::getpid()), in, opts, conv, sink);

  kWorkDir.empty();
  return 0;
}
