// Shared by the format tests: temporary files and realistic synthetic traces.
#pragma once
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "ptprof/analysis/trace_file.hpp"

namespace ptprof::testing {

// A directory removed with everything in it when the test ends.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> n{0};
    path_ = std::filesystem::temp_directory_path() /
            ("ptprof-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

inline trace::Header sample_header() {
  trace::Header h;
  h.host = "node-17";
  h.realtime_offset_ns = 1'700'000'000'000'000'000 - 123'456'789;
  h.window = 3;
  h.window_start_ns = 5'000'000'000;
  h.window_end_ns = 9'000'000'000;
  h.schedule = "wait=1,warmup=1,active=3,repeat=0";
  h.ptprof_version = "0.1.0";
  return h;
}

// A writer for `path`, or the test fails.
inline std::unique_ptr<format::TraceWriter> open_writer(const std::string& path, const trace::Header& header) {
  auto created = format::TraceWriter::create(path, header);
  INFO(created.error());
  REQUIRE(created.ok());
  return std::move(*created);
}

// Writes `n` events shaped like a training loop's CPU ops: each top-level op
// (a few us) holds 1-3 children of ~1-3 us, gaps of a few hundred ns, names
// from a set of a few dozen, autograd sequence numbers on top-level ops, shapes
// on some.
inline Status write_realistic(const std::string& path, uint64_t n, int nthreads, trace::Trace* expect = nullptr) {
  auto created = format::TraceWriter::create(path, sample_header());
  if (!created) return created.status();
  std::unique_ptr<format::TraceWriter> w = std::move(*created);
  std::vector<uint32_t> names, shapes;
  for (int i = 0; i < 40; ++i) names.push_back(w->intern("aten::op_" + std::to_string(i)));
  for (int i = 0; i < 8; ++i)
    shapes.push_back(w->intern("[[" + std::to_string(8 << i) + ", 3, 16, 16], [8, 3, 3, 3], [8], [], []]"));
  uint32_t proc = w->add_process({4242, 1, "python train.py --epochs 3", 1000});
  std::vector<uint32_t> threads;
  threads.reserve(size_t(nthreads));
  std::vector<int64_t> now(size_t(nthreads), 10'000'000'000);
  std::vector<int64_t> seq(size_t(nthreads), 0);
  for (int t = 0; t < nthreads; ++t)
    threads.push_back(w->add_thread({proc, 4242 + t, "thread-" + std::to_string(t), 0, 0}));
  std::mt19937_64 rng(42);
  uint64_t written = 0;
  auto emit = [&](const trace::Event& e) {
    w->add_event(e);
    if (expect) expect->events.push_back(e);
    ++written;
  };
  while (written < n) {
    int t = int(rng() % uint64_t(nthreads));
    int64_t& clock = now[size_t(t)];
    clock += 200 + int64_t(rng() % 600);
    trace::Event top;
    top.thread = threads[size_t(t)];
    top.name = names[rng() % 8];
    top.shapes = rng() % 2 ? shapes[rng() % shapes.size()] : 0;
    top.seq_nr = seq[size_t(t)]++;
    top.start_ns = clock;
    int64_t child_clock = clock + 100 + int64_t(rng() % 300);
    int children = 1 + int(rng() % 3);
    std::vector<trace::Event> kids;
    for (int c = 0; c < children && written + kids.size() + 1 < n; ++c) {
      trace::Event k;
      k.thread = top.thread;
      k.name = names[8 + rng() % 32];
      k.start_ns = child_clock;
      k.end_ns = child_clock + 800 + int64_t(rng() % 2500);
      child_clock = k.end_ns + 50 + int64_t(rng() % 200);
      kids.push_back(k);
    }
    top.end_ns = child_clock + 100 + int64_t(rng() % 300);
    clock = top.end_ns;
    // The launcher emits an op when it ends, so children come first.
    for (const auto& k : kids) emit(k);
    emit(top);
  }
  for (int t = 0; t < nthreads; ++t) w->set_thread_dropped(threads[size_t(t)], uint64_t(t) * 7);
  return w->finish();
}

}  // namespace ptprof::testing
