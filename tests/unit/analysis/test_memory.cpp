// Memory events end to end on synthetic data: ring records through the
// collector (ops, cross-window matching), the MEMORY chunk round trip and its
// damage, the report's CPU Mem / Self CPU Mem columns with torch's semantics,
// `ptprof memory`'s summary and the Chrome export's [memory] instants.
#include <fcntl.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "collector_fixtures.hpp"
#include "export/chrome_event_format.hpp"
#include "format/byte_io.hpp"
#include "format/chunk_writer.hpp"
#include "format/format_layout.hpp"
#include "format/memory_chunk.hpp"
#include "ptprof/analysis/memory.hpp"
#include "ptprof/analysis/report.hpp"
#include "ptprof/analysis/report_html.hpp"
#include "report/report_memory.hpp"
#include "test_cli_run.hpp"
#include "test_format_fixtures.hpp"

using namespace ptprof;
using ptprof::testing::TempDir;

namespace {

constexpr int64_t kMiB = 1 << 20;

// A trace under construction in memory: events on thread 0 of process 4242.
struct Builder {
  trace::Trace t;
  Builder() {
    t.processes.push_back({4242, 1, "python train.py", 0});
    t.threads.push_back({0, 4242, "main", 0, 0});
  }
  uint32_t str(const std::string& s) {
    if (s.empty()) return 0;
    for (uint32_t i = 0; i < t.strings.size(); ++i)
      if (t.strings[i] == s) return i;
    t.strings.push_back(s);
    return uint32_t(t.strings.size() - 1);
  }
  void op(const std::string& name, int64_t start, int64_t end, const std::string& shapes = "") {
    trace::Event e;
    e.kind = trace::EventKind::Op;
    e.name = str(name);
    e.shapes = str(shapes);
    e.start_ns = start;
    e.end_ns = end;
    t.events.push_back(e);
  }
  // An allocation (bytes > 0) or free inside `top` (outermost op).
  void mem(int64_t ts, uint64_t ptr, int64_t bytes, int64_t total, const std::string& top = "",
           const std::string& shapes = "", int8_t device = trace::kDeviceCpu) {
    trace::MemoryInfo m;
    m.ptr = ptr;
    m.bytes = bytes;
    m.total_allocated = total;
    m.device_type = device;
    m.device_index = device == trace::kDeviceCpu ? -1 : 0;
    m.top_op = str(top);
    m.top_shapes = str(shapes);
    m.op = m.top_op;
    t.memory.push_back(m);
    trace::Event e;
    e.kind = trace::EventKind::Memory;
    e.name = str("[memory]");
    e.start_ns = e.end_ns = ts;
    e.arg = t.memory.size();
    t.events.push_back(e);
  }
};

const report::Row& row(const report::Report& r, const std::string& name) {
  auto it = std::find_if(r.rows.begin(), r.rows.end(), [&](const report::Row& x) { return x.name == name; });
  INFO("row " << name);
  REQUIRE(it != r.rows.end());
  return *it;
}

}  // namespace

TEST_CASE("memory: CPU Mem sums the events inside an op, Self CPU Mem less its children", "[memory][report]") {
  Builder b;
  b.op("aten::linear", 0, 100);
  b.op("aten::empty", 10, 20);
  b.op("aten::addmm", 30, 90);
  b.mem(15, 0x1000, 400, 400, "aten::linear");  // in aten::empty
  b.mem(40, 0x2000, 64, 464, "aten::linear");   // in aten::addmm
  b.mem(95, 0x2000, -64, 400, "aten::linear");  // in aten::linear itself
  b.mem(100, 0x3000, 8, 408, "aten::linear");   // at its end: inside, as torch's [start, end]
  b.mem(150, 0x1000, -400, 8);                  // inside nothing: a [memory] row
  const report::Report r = report::compute_report({{"t", &b.t}}, report::Options{});
  CHECK(r.has_memory);
  CHECK_FALSE(r.has_cuda_memory);
  CHECK(row(r, "aten::linear").stats.cpu_memory == 408);
  CHECK(row(r, "aten::linear").stats.self_cpu_memory == 408 - 400 - 64);
  CHECK(row(r, "aten::empty").stats.cpu_memory == 400);
  CHECK(row(r, "aten::empty").stats.self_cpu_memory == 400);
  CHECK(row(r, "aten::addmm").stats.self_cpu_memory == 64);
  CHECK(row(r, "[memory]").stats.count == 1);
  CHECK(row(r, "[memory]").stats.cpu_memory == -400);
  CHECK(row(r, "[memory]").stats.self_cpu_memory == -400);
  CHECK(row(r, "aten::linear").stats.cuda_memory == 0);
}

TEST_CASE("memory: a folded child's memory stays in its parent's self", "[memory][report]") {
  Builder b;
  b.op("aten::to", 0, 100);
  b.op("aten::to", 10, 90);  // the only child, same name: folded away (torch's _remove_dup_nodes)
  b.op("aten::copy_", 20, 30);
  b.mem(15, 0x1000, 128, 128);
  b.mem(25, 0x2000, 32, 160);
  const report::Report r = report::compute_report({{"t", &b.t}}, report::Options{});
  const report::Row& to = row(r, "aten::to");
  CHECK(to.stats.count == 1);
  CHECK(to.stats.cpu_memory == 160);
  CHECK(to.stats.self_cpu_memory == 128);
  CHECK(row(r, "aten::copy_").stats.self_cpu_memory == 32);
}

TEST_CASE("memory: device memory goes to the CUDA columns", "[memory][report]") {
  Builder b;
  b.op("aten::empty", 0, 100);
  b.mem(10, 0x7f00, 512, 512, "aten::empty", "", trace::kDeviceCuda);
  const report::Report r = report::compute_report({{"t", &b.t}}, report::Options{});
  CHECK(r.has_cuda_memory);
  CHECK(row(r, "aten::empty").stats.cuda_memory == 512);
  CHECK(row(r, "aten::empty").stats.self_cuda_memory == 512);
  CHECK(row(r, "aten::empty").stats.cpu_memory == 0);
}

TEST_CASE("memory: a free of a block allocated before the window stays out of the memory columns", "[memory][report]") {
  // torch.profiler started at the window's start never tracked such a block,
  // so it reports no free of it: the columns (torch's semantics) leave it out.
  Builder b;
  b.op("aten::add", 0, 100);
  b.mem(10, 0x1000, 64, 1064, "aten::add");   // allocated in the window
  b.mem(20, 0x9000, -1000, 64, "aten::add");  // a block from before the window
  b.mem(30, 0x7000, -256, 64, "aten::add", "", trace::kDeviceCuda);
  b.mem(150, 0x8000, -8, 56);   // the same, inside no op: no [memory] row
  b.mem(160, 0x9000, 32, 88);   // the address again, allocated in the window ...
  b.mem(170, 0x9000, -32, 56);  // ... and its free counts
  const std::vector<uint8_t> before = report::detail::frees_from_before(b.t);
  CHECK(before == std::vector<uint8_t>{0, 1, 1, 1, 0, 0});
  const report::Report r = report::compute_report({{"t", &b.t}}, report::Options{});
  CHECK(r.has_memory);
  CHECK(r.has_cuda_memory);
  CHECK(row(r, "aten::add").stats.cpu_memory == 64);
  CHECK(row(r, "aten::add").stats.self_cpu_memory == 64);
  CHECK(row(r, "aten::add").stats.cuda_memory == 0);
  CHECK(row(r, "[memory]").stats.count == 2);
  CHECK(row(r, "[memory]").stats.cpu_memory == 0);

  // ptprof memory counts them: torch's totals hold them, and a line says how many.
  memory::SummaryBuilder sb;
  sb.add("t.bin", b.t);
  const memory::Summary s = std::move(sb).finish();
  CHECK(s.unmatched_frees == 3);
  CHECK(s.unmatched_freed_bytes == 1000 + 256 + 8);
  const std::string text = memory::render_text(s, {true, 20});
  CHECK(text.find("3 free(s), 1264, of blocks allocated before the window") != std::string::npos);
  REQUIRE(s.ops.size() == 2);
  CHECK(s.ops[0].op == "aten::add");
  CHECK(s.ops[0].frees == 2);
  CHECK(s.ops[0].freed_bytes == 1256);
}

TEST_CASE("memory: no memory events, no memory columns", "[memory][report]") {
  Builder b;
  b.op("aten::add", 0, 10);
  const report::Report r = report::compute_report({{"t", &b.t}}, report::Options{});
  CHECK_FALSE(r.has_memory);
}

TEST_CASE("memory: the MEMORY chunk round-trips and a dangling reference is damage", "[memory][format]") {
  TempDir dir;
  const std::string path = dir.file("m.bin");
  auto w = testing::open_writer(path, testing::sample_header());
  REQUIRE(w);
  const uint32_t p = w->add_process({7, 1, "x", 0});
  const uint32_t th = w->add_thread({p, 7, "main", 0, 0});
  trace::MemoryInfo m;
  m.ptr = 0xdeadbeef000;
  m.bytes = -(int64_t(3) << 40);
  m.total_allocated = int64_t(5) << 40;
  m.total_reserved = 77;
  m.device_type = 1;
  m.device_index = 3;
  m.op = w->intern("aten::empty");
  m.op_shapes = w->intern("[[], [], [], [], [], []]");
  m.top_op = w->intern("aten::ones");
  m.top_shapes = w->intern("[[], [], [], [], []]");
  m.alloc_ns = -12345;
  m.alloc_op = m.top_op;
  m.alloc_shapes = m.top_shapes;
  trace::Event e;
  e.kind = trace::EventKind::Memory;
  e.thread = th;
  e.name = w->intern("[memory]");
  e.start_ns = e.end_ns = 1000;
  e.arg = w->add_memory(m) + 1;
  w->add_event(e);
  REQUIRE(w->finish());
  auto t = format::read_trace(path, nullptr);
  REQUIRE(t);
  REQUIRE(t->memory.size() == 1);
  const trace::MemoryInfo& r = t->memory[0];
  CHECK(r.ptr == m.ptr);
  CHECK(r.bytes == m.bytes);
  CHECK(r.total_allocated == m.total_allocated);
  CHECK(r.total_reserved == 77);
  CHECK(r.device_type == 1);
  CHECK(r.device_index == 3);
  CHECK(t->strings[r.op] == "aten::empty");
  CHECK(t->strings[r.top_op] == "aten::ones");
  CHECK(t->strings[r.top_shapes] == "[[], [], [], [], []]");
  CHECK(r.alloc_ns == -12345);
  CHECK(t->strings[r.alloc_op] == "aten::ones");
  REQUIRE(t->events.size() == 1);
  CHECK(t->events[0].kind == trace::EventKind::Memory);
  CHECK(t->events[0].arg == 1);
  // A summary read skips the table; info still works.
  auto s = format::read_trace_summary(path, nullptr);
  REQUIRE(s);
  CHECK(s->memory.empty());

  // The writer refuses an event whose record does not exist.
  const std::string bad = dir.file("bad.bin");
  auto w2 = testing::open_writer(bad, testing::sample_header());
  REQUIRE(w2);
  w2->add_process({7, 1, "x", 0});
  w2->add_thread({0, 7, "main", 0, 0});
  e.name = w2->intern("[memory]");
  e.arg = 2;
  w2->add_event(e);
  CHECK_FALSE(w2->finish());
}

TEST_CASE("memory: a MEMORY chunk out of sequence or naming an unknown string is damage", "[memory][format]") {
  using format::detail::ChunkType;
  TempDir dir;
  auto write = [&](const std::string& path, uint64_t first, uint32_t op) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    auto out = format::detail::ChunkWriter::open(fd, path);
    REQUIRE(out);
    std::string header;
    format::detail::put_bytes(header, "host");
    for (int i = 0; i < 4; ++i) format::detail::put_varint(header, 0);  // offset, window, start, end
    format::detail::put_bytes(header, "");
    format::detail::put_bytes(header, "0.1.0");
    REQUIRE((*out)->write(ChunkType::Header, header));
    std::string memory;
    format::detail::put_varint(memory, first);
    format::detail::put_varint(memory, 1);
    trace::MemoryInfo m;
    m.bytes = 64;
    m.op = op;
    format::detail::put_memory_record(memory, m);
    REQUIRE((*out)->write(ChunkType::Memory, memory));
    REQUIRE((*out)->close());
  };
  const std::string good = dir.file("good.bin"), gap = dir.file("gap.bin"), name = dir.file("name.bin");
  write(good, 0, 0);
  write(gap, 1, 0);
  write(name, 0, 5);
  std::vector<std::string> warnings;
  auto t = format::read_trace(good, &warnings);
  REQUIRE(t);  // no footer: truncated, the table read
  CHECK(t->memory.size() == 1);
  auto g = format::read_trace(gap, nullptr);
  REQUIRE_FALSE(g);
  CHECK(g.error().find("memory chunk starts at index 1, expected 0") != std::string::npos);
  auto n = format::read_trace(name, nullptr);
  REQUIRE_FALSE(n);
  CHECK(n.error().find("names string 5") != std::string::npos);
}

TEST_CASE("memory: the collector names the ops and matches frees across windows", "[memory][collector]") {
  testing::SyntheticRegion region{1};
  launcher::CollectorOptions opts;
  opts.output_dir = "out";
  opts.grace = std::chrono::milliseconds(0);
  clock::Converter conv{clock::Kind::Monotonic};
  testing::MemorySink sink;
  region.boundary(wire::BoundaryKind::WindowBegin, 0, 0);
  region.boundary(wire::BoundaryKind::WindowEnd, 100, 0);
  region.boundary(wire::BoundaryKind::WindowBegin, 200, 1);
  auto& ring = region.ring(0);
  auto begin = [&](const char* name, uint64_t handle, uint64_t ts, wire::OpScope scope = wire::OpScope::Function) {
    wire::OpBeginPayload op{};
    op.handle = handle;
    op.seq_nr = -1;
    op.scope = uint8_t(scope);
    REQUIRE(wire::emit(ring, wire::RecordType::OpBegin, region.name(name), ts, op));
  };
  auto end = [&](uint64_t handle, uint64_t ts) {
    REQUIRE(wire::emit(ring, wire::RecordType::OpEnd, 0, ts, wire::OpEndPayload{handle}));
  };
  auto mem = [&](uint64_t ptr, int64_t bytes, uint64_t ts) {
    wire::MemoryEventPayload p{};
    p.ptr = ptr;
    p.bytes = bytes;
    p.total_allocated = bytes > 0 ? bytes : 0;
    p.device_type = 0;
    p.device_index = -1;
    REQUIRE(wire::emit(ring, wire::RecordType::MemoryEvent, 0, ts, p));
  };
  begin("train_step", 1, 5, wire::OpScope::UserScope);
  begin("aten::ones", 2, 10);
  begin("aten::empty", 3, 11);
  mem(0xa000, 4096, 12);
  end(3, 13);
  end(2, 14);
  end(1, 15);
  begin("aten::add_", 4, 210);
  mem(0xa000, -4096, 211);  // allocated in window 0, freed in window 1
  end(4, 212);
  launcher::ProcessCollector c(region.take(), launcher::FileStem{"host", 4242, 0}, opts, conv, sink);
  c.drain(1000);
  c.finish();
  const trace::Trace& w0 = sink.traces.at("out/host.4242.w000.bin");
  const trace::Trace& w1 = sink.traces.at("out/host.4242.w001.bin");
  REQUIRE(w0.memory.size() == 1);
  CHECK(w0.strings[w0.memory[0].op] == "aten::empty");
  CHECK(w0.strings[w0.memory[0].top_op] == "aten::ones");  // the user scope is not an operator
  CHECK(w0.memory[0].bytes == 4096);
  CHECK(w0.memory[0].alloc_ns == 0);
  REQUIRE(w1.memory.size() == 1);
  CHECK(w1.memory[0].bytes == -4096);
  CHECK(w1.memory[0].alloc_ns == 12);
  CHECK(w1.strings[w1.memory[0].alloc_op] == "aten::ones");
  CHECK(w1.strings[w1.memory[0].top_op] == "aten::add_");
  const auto is_memory = [](const trace::Event& e) { return e.kind == trace::EventKind::Memory; };
  auto it = std::find_if(w1.events.begin(), w1.events.end(), is_memory);
  REQUIRE(it != w1.events.end());
  CHECK(it->start_ns == 211);
  CHECK(it->end_ns == 211);
  CHECK(w1.strings[it->name] == "[memory]");
}

TEST_CASE("memory: ptprof memory's peaks, live groups and per-op counts", "[memory][summary]") {
  Builder b;
  int64_t total = 0;
  // 12 steps each keep one 1 MiB block from aten::ones and free a temporary.
  for (int i = 0; i < 12; ++i) {
    const int64_t t0 = i * 100;
    b.op("aten::ones", t0, t0 + 10, "[[], [], [], [], []]");
    total += kMiB;
    b.mem(t0 + 5, 0x10000 + uint64_t(i) * 0x200000, kMiB, total, "aten::ones", "[[], [], [], [], []]");
    b.op("aten::mul", t0 + 20, t0 + 30, "[[512, 512], []]");
    total += 4096;
    b.mem(t0 + 25, 0x9000000, 4096, total, "aten::mul", "[[512, 512], []]");
    total -= 4096;
    b.mem(t0 + 40, 0x9000000, -4096, total);
  }
  b.op("aten::empty", 2000, 2010, "[[], [], [], [], [], []]");
  b.mem(2005, 0xf000000, 256 * kMiB, total + 256 * kMiB, "aten::empty");
  b.mem(2020, 0xf000000, -256 * kMiB, total);
  // A free of a block an earlier window allocated (the launcher matched it).
  b.mem(2030, 0xe000000, -512, total, "aten::add_");
  b.t.memory.back().alloc_ns = 7;
  memory::SummaryBuilder sb;
  sb.add("t.bin", b.t);
  const memory::Summary s = std::move(sb).finish();
  CHECK(s.events == 12 * 3 + 3);
  CHECK(s.earlier_frees == 1);
  CHECK(s.earlier_freed_bytes == 512);
  CHECK(s.unmatched_frees == 0);
  REQUIRE(s.peaks.size() == 1);
  CHECK(s.peaks[0].allocated == 12 * kMiB + 256 * kMiB);
  CHECK(s.peaks[0].allocated_op == "aten::empty");
  REQUIRE(s.live.size() == 1);
  CHECK(s.live[0].op == "aten::ones");
  CHECK(s.live[0].count == 12);
  CHECK(s.live[0].bytes == 12 * kMiB);
  CHECK(s.live[0].block_bytes == kMiB);
  REQUIRE(s.ops.size() >= 3);
  CHECK(s.ops[0].op == "aten::empty");
  CHECK(s.ops[1].op == "aten::ones");
  CHECK(s.ops[1].allocs == 12);
  CHECK(s.timeline.size() == s.events);
  CHECK(std::is_sorted(s.timeline.begin(), s.timeline.end(),
                       [](const memory::TimelinePoint& a, const memory::TimelinePoint& c) { return a.ns < c.ns; }));

  const std::string text = memory::render_text(s, {});
  CHECK(text.find("12.00 MiB") != std::string::npos);
  CHECK(text.find("268.00 MiB at aten::empty") != std::string::npos);
  CHECK(text.find("1 free(s), 512 B, of blocks allocated in an earlier window") != std::string::npos);
  const std::string exact = memory::render_text(s, {true, 20});
  CHECK(exact.find(std::to_string(12 * kMiB)) != std::string::npos);
  const std::string csv = memory::render_timeline_csv(s);
  CHECK(csv.rfind("time_ns,pid,device,allocated_bytes,reserved_bytes\n5,4242,CPU,1048576,0\n", 0) == 0);
}

TEST_CASE("memory: human units", "[memory][summary]") {
  CHECK(memory::format_bytes(0, false) == "0 B");
  CHECK(memory::format_bytes(1023, false) == "1023 B");
  CHECK(memory::format_bytes(1536, false) == "1.50 KiB");
  CHECK(memory::format_bytes(-kMiB, false) == "-1.00 MiB");
  CHECK(memory::format_bytes(int64_t(3) << 30, false) == "3.00 GiB");
  CHECK(memory::format_bytes(1536, true) == "1536");
}

TEST_CASE("memory: Chrome export writes Kineto's [memory] instant", "[memory][export]") {
  Builder b;
  b.mem(5000, 767375936, 1024, 2048, "aten::ones");
  exporting::detail::ChromeEventFormatter f(0);
  f.begin_file(0);
  std::string line;
  f.append(line, b.t, b.t.events[0], 9);
  CHECK(line ==
        "{\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"s\":\"t\",\"name\":\"[memory]\",\"pid\":4242,\"tid\":4242,"
        "\"ts\":5.000,\"args\":{\"Total Reserved\":0,\"Total Allocated\":2048,\"Bytes\":1024,\"Device Id\":-1,"
        "\"Device Type\":0,\"Addr\":767375936,\"Ev Idx\":8}}");
}

TEST_CASE("memory: the command line", "[memory][cli]") {
  auto missing = testing::run_ptprof("memory /nonexistent/dir");
  CHECK(missing.status == 2);
  CHECK(missing.out.find("/nonexistent/dir") != std::string::npos);
  auto none = testing::run_ptprof("memory");
  CHECK(none.status == 2);
  auto help = testing::run_ptprof("memory --help");
  CHECK(help.status == 0);
  CHECK(help.out.find("--timeline") != std::string::npos);
  CHECK(help.out.find("--bytes") != std::string::npos);

  TempDir dir;
  const std::string path = dir.file("m.bin");
  auto w = testing::open_writer(path, testing::sample_header());
  REQUIRE(w);
  w->add_process({7, 1, "x", 0});
  w->add_thread({0, 7, "main", 0, 0});
  trace::MemoryInfo m;
  m.ptr = 0x1000;
  m.bytes = 3 * kMiB;
  m.total_allocated = 3 * kMiB;
  m.top_op = w->intern("aten::zeros");
  trace::Event e;
  e.kind = trace::EventKind::Memory;
  e.name = w->intern("[memory]");
  e.start_ns = e.end_ns = 10;
  e.arg = w->add_memory(m) + 1;
  w->add_event(e);
  REQUIRE(w->finish());
  const std::string csv = dir.file("timeline.csv");
  auto ok = testing::run_ptprof("memory " + path + " --bytes --timeline " + csv);
  CHECK(ok.status == 0);
  CHECK(ok.out.find("3145728") != std::string::npos);
  CHECK(ok.out.find("aten::zeros") != std::string::npos);
  std::FILE* f = std::fopen(csv.c_str(), "r");
  REQUIRE(f);
  char buf[256] = {};
  CHECK(std::fread(buf, 1, sizeof buf - 1, f) > 0);
  std::fclose(f);
  CHECK(std::string(buf) == "time_ns,pid,device,allocated_bytes,reserved_bytes\n10,7,CPU,3145728,0\n");
  auto bad_limit = testing::run_ptprof("memory " + path + " --row-limit -1");
  CHECK(bad_limit.status == 2);
}

TEST_CASE("memory: segments and concrete inputs round-trip in MEMORY_ATTRIBUTES; dangling ones are damage",
          "[memory][format]") {
  TempDir dir;
  const std::string path = dir.file("s.bin");
  auto w = testing::open_writer(path, testing::sample_header());
  REQUIRE(w);
  const uint32_t p = w->add_process({7, 1, "x", 0});
  const uint32_t th = w->add_thread({p, 7, "main", 0, 0});
  for (int i = 0; i < 3; ++i) {
    trace::MemoryInfo m;
    m.ptr = 0x1000 + uint64_t(i);
    m.bytes = 4096;
    m.device_type = trace::kDeviceCuda;
    m.device_index = 1;
    m.segment = i != 1;
    if (i == 1) m.top_inputs = w->intern("[512, 512]");
    trace::Event e;
    e.kind = trace::EventKind::Memory;
    e.thread = th;
    e.name = w->intern("[memory]");
    e.start_ns = e.end_ns = 1000 + i;
    e.arg = w->add_memory(m) + 1;
    w->add_event(e);
  }
  REQUIRE(w->finish());
  auto t = format::read_trace(path, nullptr);
  REQUIRE(t);
  REQUIRE(t->memory.size() == 3);
  CHECK(t->memory[0].segment);
  CHECK_FALSE(t->memory[1].segment);
  CHECK(t->strings.at(t->memory[1].top_inputs) == "[512, 512]");
  CHECK(t->memory[2].segment);
  CHECK(t->memory[2].top_inputs == 0);

  trace::Trace one;
  one.memory.resize(2);
  one.strings.push_back("[512, 512]");
  trace::MemoryInfo attrs;
  attrs.segment = true;
  attrs.top_inputs = 1;
  std::string records;
  uint32_t count = 0;
  format::detail::put_memory_attributes(records, &count, 1, attrs);
  format::detail::put_memory_attributes(records, &count, 0, trace::MemoryInfo{});  // nothing to say: no record
  CHECK(count == 1);
  std::string payload = format::detail::memory_attributes_payload(count, records);
  format::detail::Cursor c(reinterpret_cast<const uint8_t*>(payload.data()), payload.size());
  REQUIRE(format::detail::decode_memory_attributes(c, one).ok());
  CHECK(one.memory[1].segment);
  CHECK(one.memory[1].top_inputs == 1);
  CHECK_FALSE(one.memory[0].segment);
  // A record that does not exist, and a string that does not exist.
  records.clear();
  count = 0;
  format::detail::put_memory_attributes(records, &count, 2, attrs);
  payload = format::detail::memory_attributes_payload(count, records);
  format::detail::Cursor bad(reinterpret_cast<const uint8_t*>(payload.data()), payload.size());
  CHECK_FALSE(format::detail::decode_memory_attributes(bad, one).ok());
  records.clear();
  count = 0;
  attrs.top_inputs = 9;
  format::detail::put_memory_attributes(records, &count, 0, attrs);
  payload = format::detail::memory_attributes_payload(count, records);
  format::detail::Cursor bad_string(reinterpret_cast<const uint8_t*>(payload.data()), payload.size());
  CHECK_FALSE(format::detail::decode_memory_attributes(bad_string, one).ok());
}

TEST_CASE("memory: CUDA Mem counts CUDA segments only in a trace without torch's device allocations",
          "[memory][report]") {
  Builder b;
  b.op("aten::empty", 0, 100);
  b.mem(10, 0x7f00, 2 * kMiB, 0, "aten::empty", "", trace::kDeviceCuda);  // the segment
  b.t.memory.back().segment = true;
  b.t.memory.back().total_reserved = 2 * kMiB;
  {
    const report::Report r = report::compute_report({{"t", &b.t}}, report::Options{});
    CHECK(row(r, "aten::empty").stats.cuda_memory == 2 * kMiB);
  }
  b.mem(20, 0x7f00, 512, 512, "aten::empty", "", trace::kDeviceCuda);  // torch's block in it
  const report::Report r = report::compute_report({{"t", &b.t}}, report::Options{});
  CHECK(row(r, "aten::empty").stats.cuda_memory == 512);
  CHECK(row(r, "aten::empty").stats.self_cuda_memory == 512);

  memory::SummaryBuilder sb;
  sb.add("t.bin", b.t);
  const memory::Summary s = std::move(sb).finish();
  REQUIRE(s.peaks.size() == 1);
  CHECK(s.peaks[0].allocated == 512);
  CHECK(s.peaks[0].reserved == 2 * kMiB);
  REQUIRE(s.live.size() == 1);  // the segment is no leak candidate
  CHECK(s.live[0].bytes == 512);
  REQUIRE(s.segment_ops.size() == 1);
  CHECK(s.segment_ops[0].alloc_bytes == 2 * kMiB);
}

TEST_CASE("memory: the HTML report plots allocated and reserved memory over time", "[memory][html]") {
  Builder b;
  b.op("aten::ones", 0, 100);
  b.mem(10, 0x1000, kMiB, kMiB, "aten::ones");
  b.mem(20, 0x7f00, 2 * kMiB, 0, "", "", trace::kDeviceCuda);
  b.t.memory.back().segment = true;
  b.t.memory.back().total_reserved = 2 * kMiB;
  b.mem(90, 0x1000, -kMiB, 0);
  memory::SummaryBuilder sb;
  sb.add("t.bin", b.t);
  const memory::Summary s = std::move(sb).finish();
  const report::Report r = report::compute_report({{"t", &b.t}}, report::Options{});
  const std::string page = html::render_html(r, nullptr, &s);
  CHECK(page.find("<h2 id=\"memory-title\">Memory over time</h2>") != std::string::npos);
  // One solid line per device, and a dashed one where something is reserved.
  size_t lines = 0, dashed = 0;
  for (size_t at = page.find("<polyline"); at != std::string::npos; at = page.find("<polyline", at + 1)) {
    ++lines;
    const std::string tag = page.substr(at, page.find('>', at) - at);
    dashed += tag.find("stroke-dasharray") != std::string::npos;
  }
  CHECK(lines == 3);
  CHECK(dashed == 1);
  CHECK(page.find("pid 4242 CPU: allocated") != std::string::npos);
  CHECK(page.find("pid 4242 CUDA:0: allocated (solid), reserved (dashed)") != std::string::npos);
  CHECK(page.find("2.00 MiB") != std::string::npos);  // the y axis' top

  const std::string without = html::render_html(r, nullptr, nullptr);
  CHECK(without.find("Memory over time") == std::string::npos);
}

TEST_CASE("memory: growth step over step names what survives from two or more steps", "[memory][growth]") {
  Builder b;
  uint64_t ptr = 0x1000;
  // Setup before step 1: a parameter, live throughout (not growth).
  b.op("aten::empty", 0, 50);
  b.mem(10, 0x99000, 64, 64, "aten::empty");
  int64_t total = 64;
  for (int64_t step = 1; step <= 3; ++step) {
    const int64_t at = step * 1000;
    trace::Event s;
    s.kind = trace::EventKind::Step;
    s.name = b.str("ProfilerStep#" + std::to_string(step));
    s.arg = uint64_t(step);
    s.start_ns = at;
    s.end_ns = at + 900;
    b.t.events.push_back(s);
    b.op("aten::ones", at + 10, at + 100);
    b.mem(at + 20, ptr += 0x100000, kMiB, total += kMiB, "aten::ones");  // kept: growth
    b.op("aten::mul", at + 200, at + 300);
    b.mem(at + 210, 0x50000, 4096, total + 4096, "aten::mul");  // a temporary, freed in the step
    b.mem(at + 290, 0x50000, -4096, total, "aten::mul");
    if (step == 1) {
      b.op("Optimizer.step#SGD.step", at + 400, at + 500);
      b.mem(at + 410, 0x70000, 256, total += 256, "Optimizer.step#SGD.step");  // state made once: no growth
    }
  }
  // The teardown after the last step frees everything: the growth stands.
  b.mem(5000, 0x1000 + 0x100000, -kMiB, total -= kMiB);
  b.mem(5001, 0x1000 + 0x200000, -kMiB, total -= kMiB);
  b.mem(5002, 0x1000 + 0x300000, -kMiB, total -= kMiB);
  memory::SummaryBuilder sb;
  sb.add("t.bin", b.t);
  const memory::Summary s = std::move(sb).finish();
  CHECK(s.steps == 3);
  REQUIRE(s.growth.size() == 1);
  CHECK(s.growth[0].op == "aten::ones");
  CHECK(s.growth[0].steps == 3);
  CHECK(s.growth[0].count == 3);
  CHECK(s.growth[0].bytes == 3 * kMiB);
  CHECK(s.growth[0].first_step == 1);
  CHECK(s.growth[0].last_step == 3);
  REQUIRE(s.step_live.size() == 3);
  CHECK(s.step_live[0].live == 64 + kMiB + 256);
  CHECK(s.step_live[0].change == kMiB + 256);
  CHECK(s.step_live[1].live == 64 + 2 * kMiB + 256);
  CHECK(s.step_live[1].change == kMiB);
  CHECK(s.step_live[2].live == 64 + 3 * kMiB + 256);
  CHECK(s.step_live[2].blocks == 5);
  CHECK(s.live.size() == 2);  // the window's end: only the parameter and the optimizer's state

  const std::string text = memory::render_text(s, memory::RenderOptions{true, 0});
  CHECK_THAT(text, Catch::Contains("Growth step over step"));
  CHECK_THAT(text, Catch::Contains("3145728        1048576        3        3          3  CPU      aten::ones"));
  CHECK_THAT(text, Catch::Contains("4242 CPU             3        3146048        5       +1048576"));
  const report::Report r = report::compute_report({{"t", &b.t}}, report::Options{});
  const std::string page = html::render_html(r, nullptr, &s);
  CHECK_THAT(page, Catch::Contains("Grows step over step: aten::ones on CPU, 1.00 MiB per step in 3 steps"));

  // Without steps: no growth tables, a line that says why.
  Builder none;
  none.op("aten::ones", 0, 100);
  none.mem(10, 0x1000, kMiB, kMiB, "aten::ones");
  memory::SummaryBuilder nb;
  nb.add("t.bin", none.t);
  const memory::Summary ns = std::move(nb).finish();
  CHECK(ns.steps == 0);
  CHECK(ns.growth.empty());
  CHECK_THAT(memory::render_text(ns, memory::RenderOptions{}), Catch::Contains("No steps recorded"));
}
