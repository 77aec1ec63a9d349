// The CUDA parts of the trace format (docs/format.md: CUDA and GPU_LANES
// chunks, event kinds 5-11): every CudaInfo field round-trips, lanes keep
// their device, records span chunks, and damage ends in an error or a valid
// read.
#include <catch2/catch.hpp>

#include "format/byte_io.hpp"
#include "format/chunk_decode.hpp"
#include "format/cuda_chunk.hpp"
#include "format/format_layout.hpp"
#include "test_format_fixtures.hpp"

using namespace ptprof;
using ptprof::testing::TempDir;

namespace {

trace::CudaInfo sample_info(uint32_t i, uint32_t kernel_name) {
  trace::CudaInfo c;
  c.correlation_id = 1000 + i;
  c.external_id = i % 3 ? 0 : 0xFFFF'FFFF'FFFF'FFF0ull + (i % 7);
  c.stream = 7 + i % 4;
  c.ptr = 0x7f00'0000'0000ull + uint64_t(i) * 4096;
  c.bytes = uint64_t(i) * 1024;
  c.graph_node_id = i % 5 ? 0 : UINT64_MAX;
  c.grid[0] = i;
  c.grid[1] = 2;
  c.grid[2] = UINT32_MAX;
  c.block[0] = 128;
  c.block[1] = i % 2;
  c.block[2] = 1;
  c.device = i % 2 ? 1 : -1;
  c.result = i % 11 ? 0 : -35;
  c.kernel_name = kernel_name;
  c.family = uint8_t(i % 2);
  c.copy_kind = uint8_t(i % 256);
  c.graph_id = i % 5 ? 0 : UINT32_MAX - i;
  c.graph_capture = i % 5 ? trace::GraphCapture::None : trace::GraphCapture(1 + i % 2);
  c.capture_op = c.graph_capture == trace::GraphCapture::Recorded ? kernel_name : 0;
  return c;
}

void require_same(const trace::CudaInfo& a, const trace::CudaInfo& b) {
  REQUIRE(a.correlation_id == b.correlation_id);
  REQUIRE(a.external_id == b.external_id);
  REQUIRE(a.stream == b.stream);
  REQUIRE(a.ptr == b.ptr);
  REQUIRE(a.bytes == b.bytes);
  REQUIRE(a.graph_node_id == b.graph_node_id);
  for (int d = 0; d < 3; ++d) {
    REQUIRE(a.grid[d] == b.grid[d]);
    REQUIRE(a.block[d] == b.block[d]);
  }
  REQUIRE(a.device == b.device);
  REQUIRE(a.result == b.result);
  REQUIRE(a.kernel_name == b.kernel_name);
  REQUIRE(a.family == b.family);
  REQUIRE(a.copy_kind == b.copy_kind);
  REQUIRE(a.graph_id == b.graph_id);
  REQUIRE(a.graph_capture == b.graph_capture);
  REQUIRE(a.capture_op == b.capture_op);
}

// A trace with CPU threads, two GPU lanes and `n` CUDA events of every CUDA
// kind; returns what was written.
trace::Trace write_cuda_trace(const std::string& path, uint32_t n) {
  auto w = testing::open_writer(path, testing::sample_header());
  REQUIRE(w);
  trace::Trace want;
  w->add_process({10, 1, "python", 0});
  uint32_t cpu = w->add_thread({0, 10, "main", 0, 0});
  trace::Thread lane0{0, 7, "GPU 0 stream 7", 0, 0, 0};
  trace::Thread lane1{0, 13, "GPU 1 stream 13", 0, 0, 1};
  uint32_t l0 = w->add_thread(lane0);
  uint32_t l1 = w->add_thread(lane1);
  want.threads = {{0, 10, "main", 0, 0, -1}, lane0, lane1};
  uint32_t kernel = w->intern("void gemm_kernel<float>(float*)");
  uint32_t api = w->intern("cudaLaunchKernel");
  for (uint32_t i = 0; i < n; ++i) {
    trace::CudaInfo c = sample_info(i, i % 2 ? kernel : 0);
    uint32_t index = w->add_cuda(c);
    REQUIRE(index == i);
    want.cuda.push_back(c);
    trace::Event e;
    e.kind = trace::EventKind(5 + i % 7);
    e.thread = e.kind == trace::EventKind::CudaApi ? cpu : (i % 2 ? l1 : l0);
    e.name = e.kind == trace::EventKind::CudaApi ? api : kernel;
    e.start_ns = int64_t(i) * 100;
    e.end_ns = e.start_ns + 50;
    e.arg = uint64_t(index) + 1;
    w->add_event(e);
    want.events.push_back(e);
  }
  // An op carries its handle as arg: the join key of its kernels.
  trace::Event op;
  op.kind = trace::EventKind::Op;
  op.thread = cpu;
  op.name = w->intern("aten::mm");
  op.arg = 0xFFFF'FFFF'FFFF'FFF0ull;
  w->add_event(op);
  want.events.push_back(op);
  REQUIRE(w->finish().ok());
  return want;
}

}  // namespace

TEST_CASE("CUDA records, GPU lanes and CUDA event kinds round-trip", "[format][cuda]") {
  TempDir dir;
  const std::string path = dir.file("cuda.bin");
  // More records than one CUDA chunk holds.
  trace::Trace want = write_cuda_trace(path, 70'000);
  std::vector<std::string> warnings;
  auto t = format::read_trace(path, &warnings);
  INFO(t.error());
  REQUIRE(t);
  CHECK(warnings.empty());
  REQUIRE(t->threads.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(t->threads[i].device == want.threads[i].device);
    CHECK(t->threads[i].tid == want.threads[i].tid);
    CHECK(t->threads[i].name == want.threads[i].name);
  }
  REQUIRE(t->cuda.size() == want.cuda.size());
  for (size_t i = 0; i < want.cuda.size(); ++i) require_same(t->cuda[i], want.cuda[i]);
  REQUIRE(t->events.size() == want.events.size());
  for (size_t i = 0; i < want.events.size(); ++i) {
    CHECK(t->events[i].kind == want.events[i].kind);
    CHECK(t->events[i].arg == want.events[i].arg);
    CHECK(t->events[i].thread == want.events[i].thread);
  }
  CHECK(t->strings.at(t->cuda[1].kernel_name) == "void gemm_kernel<float>(float*)");

  // The streaming reader hands out the CUDA table with the events.
  size_t seen = 0;
  auto s = format::read_trace_streaming(
      path,
      [&](const trace::Trace& meta, const std::vector<trace::Event>& events) {
        for (const auto& e : events) {
          if (e.kind == trace::EventKind::Op) continue;
          REQUIRE(e.arg <= meta.cuda.size());
          ++seen;
        }
      },
      &warnings);
  REQUIRE(s);
  CHECK(seen == 70'000);
}

TEST_CASE("a writer refuses an event that refers to a CUDA record it does not have", "[format][cuda]") {
  TempDir dir;
  auto w = testing::open_writer(dir.file("bad.bin"), testing::sample_header());
  REQUIRE(w);
  w->add_process({1, 0, "p", 0});
  trace::Event e;
  e.thread = w->add_thread({0, 1, "t", 0, 0});
  e.kind = trace::EventKind::Kernel;
  e.arg = 1;  // no CUDA record yet
  w->add_event(e);
  auto st = w->finish();
  REQUIRE_FALSE(st.ok());
  CHECK_THAT(st.message(), Catch::Contains("CUDA record 1 of 0"));
}

TEST_CASE("damaged CUDA chunks give an error or a valid read, never a crash", "[format][cuda][damage]") {
  TempDir dir;
  const std::string path = dir.file("cuda.bin");
  write_cuda_trace(path, 300);
  const std::string full = testing::slurp(path);
  size_t errors = 0;
  for (size_t at = 16; at < full.size(); ++at) {
    std::string bytes = full;
    bytes[at] = char(bytes[at] ^ 0x5a);
    const std::string damaged = dir.file("damaged.bin");
    testing::spit(damaged, bytes);
    std::vector<std::string> warnings;
    auto t = format::read_trace(damaged, &warnings);
    if (!t) {
      CHECK(t.error().rfind(damaged + ": ", 0) == 0);
      ++errors;
      continue;
    }
    // A read that succeeds holds only references that resolve.
    for (const auto& e : t->events)
      if (e.kind >= trace::EventKind::CudaApi && e.kind <= trace::EventKind::CuptiApi) REQUIRE(e.arg <= t->cuda.size());
    for (const auto& c : t->cuda) REQUIRE(c.kernel_name < t->strings.size());
  }
  CHECK(errors > 0);
  for (size_t len = 16; len < full.size(); len += 7) {
    const std::string damaged = dir.file("short.bin");
    testing::spit(damaged, full.substr(0, len));
    std::vector<std::string> warnings;
    auto t = format::read_trace(damaged, &warnings);
    if (t) {
      for (const auto& e : t->events)
        if (e.kind >= trace::EventKind::CudaApi && e.kind <= trace::EventKind::CuptiApi)
          REQUIRE(e.arg <= t->cuda.size());
    }
  }
}

namespace {

// A CUDA chunk's payload of one kernel record with `ncols` columns: the 17
// every file has, then the graph id (column 17), the graph capture and its
// op (18, 19: `capture`, string 1), the launch facts (20-25: context 3,
// registers 40, shared memory 400 + 1024, queued -5, cbid 211), then
// columns no reader knows.
std::string one_record_chunk(uint64_t ncols, uint64_t capture = 1) {
  using namespace format::detail;
  std::vector<std::string> cols(ncols);
  for (uint64_t i = 0; i < ncols; ++i) put_varint(cols[i], 0);
  cols[kCudaCorrelation].clear();
  put_varint(cols[kCudaCorrelation], 77);
  cols[kCudaGraphNode].clear();
  put_varint(cols[kCudaGraphNode], 9001);
  if (ncols > kCudaGraphId) {
    cols[kCudaGraphId].clear();
    put_varint(cols[kCudaGraphId], 12);
  }
  if (ncols > kCudaGraphCapture) {
    cols[kCudaGraphCapture].clear();
    put_varint(cols[kCudaGraphCapture], capture);
  }
  if (ncols > kCudaCaptureOp) {
    cols[kCudaCaptureOp].clear();
    put_varint(cols[kCudaCaptureOp], 1);
  }
  const std::pair<CudaColumn, uint64_t> facts[] = {
      {kCudaContext, 3}, {kCudaRegisters, 40}, {kCudaStaticShared, 400}, {kCudaDynamicShared, 1024}, {kCudaCbid, 211}};
  for (const auto& [k, v] : facts) {
    if (ncols <= k) continue;
    cols[k].clear();
    put_varint(cols[k], v);
  }
  const std::pair<CudaColumn, int64_t> times[] = {{kCudaQueued, -5}, {kCudaCuptiStart, 1500}, {kCudaCuptiEnd, -2}};
  for (const auto& [k, v] : times) {
    if (ncols <= k) continue;
    cols[k].clear();
    put_svarint(cols[k], v);
  }
  std::string raw;
  put_varint(raw, 0);  // first
  put_varint(raw, 1);  // count
  put_varint(raw, ncols);
  for (const auto& c : cols) put_varint(raw, c.size());
  for (const auto& c : cols) raw += c;
  return raw;
}

}  // namespace

TEST_CASE("CUDA chunks: the graph id column is read when present, 0 in files without it", "[format][cuda]") {
  using namespace format::detail;
  CHECK(kCudaGraphId == 17);  // appended after the 17 columns every file has
  for (uint64_t ncols : {uint64_t(17), uint64_t(18), uint64_t(19)}) {
    INFO("columns: " << ncols);
    const std::string raw = one_record_chunk(ncols);
    trace::Trace t;
    t.strings.emplace_back();
    const Status st = decode_cuda(Cursor(reinterpret_cast<const uint8_t*>(raw.data()), raw.size()), t);
    INFO(st.message());
    REQUIRE(st.ok());
    REQUIRE(t.cuda.size() == 1);
    CHECK(t.cuda[0].correlation_id == 77);
    CHECK(t.cuda[0].graph_node_id == 9001);
    CHECK(t.cuda[0].graph_id == (ncols > 17 ? 12u : 0u));
  }
  trace::Trace t;
  const std::string raw = one_record_chunk(16);
  CHECK_FALSE(decode_cuda(Cursor(reinterpret_cast<const uint8_t*>(raw.data()), raw.size()), t).ok());
}

TEST_CASE("CUDA chunks: a graph kernel's capture is read when present, none in files without it", "[format][cuda]") {
  using namespace format::detail;
  CHECK(kCudaGraphCapture == 18);
  CHECK(kCudaCaptureOp == 19);
  for (uint64_t ncols : {uint64_t(17), uint64_t(18), uint64_t(19), uint64_t(20), uint64_t(21)}) {
    INFO("columns: " << ncols);
    const std::string raw = one_record_chunk(ncols);
    trace::Trace t;
    t.strings = {"", "aten::mm"};
    const Status st = decode_cuda(Cursor(reinterpret_cast<const uint8_t*>(raw.data()), raw.size()), t);
    INFO(st.message());
    REQUIRE(st.ok());
    REQUIRE(t.cuda.size() == 1);
    CHECK(t.cuda[0].graph_capture == (ncols > 18 ? trace::GraphCapture::Recorded : trace::GraphCapture::None));
    CHECK(t.cuda[0].capture_op == (ncols > 19 ? 1u : 0u));
  }
  // A capture of a later kind, or an op beyond the strings: an error.
  trace::Trace t;
  t.strings = {"", "aten::mm"};
  std::string raw = one_record_chunk(20, 3);
  CHECK_FALSE(decode_cuda(Cursor(reinterpret_cast<const uint8_t*>(raw.data()), raw.size()), t).ok());
  t.cuda.clear();
  t.strings = {""};
  raw = one_record_chunk(20);
  CHECK_FALSE(decode_cuda(Cursor(reinterpret_cast<const uint8_t*>(raw.data()), raw.size()), t).ok());
}

TEST_CASE("CUDA chunks: the launch facts are read where a file has them, 0 in files without them", "[format][cuda]") {
  using namespace format::detail;
  CHECK(kCudaContext == 20);
  CHECK(kCudaCbid == 25);
  for (uint64_t ncols = 20; ncols <= uint64_t(kCudaColumnsWritten) + 1; ++ncols) {
    INFO("columns: " << ncols);
    const std::string raw = one_record_chunk(ncols);
    trace::Trace t;
    t.strings = {"", "aten::mm"};
    const Status st = decode_cuda(Cursor(reinterpret_cast<const uint8_t*>(raw.data()), raw.size()), t);
    INFO(st.message());
    REQUIRE(st.ok());
    REQUIRE(t.cuda.size() == 1);
    const trace::CudaInfo& c = t.cuda[0];
    CHECK(c.context == (ncols > kCudaContext ? 3u : 0u));
    CHECK(c.registers == (ncols > kCudaRegisters ? 40u : 0u));
    CHECK(c.static_shared == (ncols > kCudaStaticShared ? 400u : 0u));
    CHECK(c.dynamic_shared == (ncols > kCudaDynamicShared ? 1024u : 0u));
    CHECK(c.queued_ns == (ncols > kCudaQueued ? -5 : 0));
    CHECK(c.cbid == (ncols > kCudaCbid ? 211u : 0u));
    CHECK(c.cupti_start_ns == (ncols > kCudaCuptiStart ? 1500 : 0));
    CHECK(c.cupti_end_ns == (ncols > kCudaCuptiEnd ? -2 : 0));
  }
  // What the writer puts is what the reader gets.
  trace::CudaInfo in;
  in.correlation_id = 5;
  in.context = 1;
  in.registers = 255;
  in.static_shared = 49152;
  in.dynamic_shared = 166912;
  in.queued_ns = 1700000000123456789;
  in.cbid = 307;
  in.cupti_start_ns = 1700000000123450000;
  in.cupti_end_ns = 1700000000123460000;
  CudaColumns cols;
  cols.put(in);
  const std::string raw = cols.take(0, 1);
  trace::Trace t;
  t.strings = {""};
  REQUIRE(decode_cuda(Cursor(reinterpret_cast<const uint8_t*>(raw.data()), raw.size()), t).ok());
  REQUIRE(t.cuda.size() == 1);
  CHECK(t.cuda[0].context == 1);
  CHECK(t.cuda[0].registers == 255);
  CHECK(t.cuda[0].static_shared == 49152);
  CHECK(t.cuda[0].dynamic_shared == 166912);
  CHECK(t.cuda[0].queued_ns == 1700000000123456789);
  CHECK(t.cuda[0].cbid == 307);
  CHECK(t.cuda[0].cupti_start_ns == 1700000000123450000);
  CHECK(t.cuda[0].cupti_end_ns == 1700000000123460000);
}
