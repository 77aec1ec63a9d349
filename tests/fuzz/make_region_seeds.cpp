// Writes the synthetic seeds of corpus/fuzz_region: process regions as an
// agent lays them out (rings written through wire::emit, names through the
// string arena), dumped as region_input.hpp segments. Run it again after a
// change to the region ABI:
//   build/bin/make_region_seeds tests/fuzz/corpus/fuzz_region
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ptprof/record_emit.hpp"
#include "ptprof/shapes.hpp"
#include "ptprof/shm_abi.hpp"
#include "ptprof/string_arena.hpp"
#include "region_input.hpp"

namespace {

using namespace ptprof;

class SeedRegion {
 public:
  SeedRegion(uint64_t ring_bytes, uint32_t threads) : bytes_(fuzz::kRegionBytes) {
    auto* h = std::construct_at(reinterpret_cast<wire::ProcessHeader*>(bytes_.data()));
    const wire::RegionLayout l = wire::region_layout(ring_bytes, fuzz::kMaxFuzzThreads, fuzz::kFuzzArenaCapacity);
    h->magic = wire::kProcessMagic;
    h->version = wire::kWireVersion;
    h->pid = 4242;
    h->ppid = 1;
    h->max_threads = fuzz::kMaxFuzzThreads;
    h->ring_bytes = ring_bytes;
    h->strings_offset = l.strings_offset;
    h->strings_capacity = l.strings_capacity;
    h->rings_offset = l.rings_offset;
    std::snprintf(h->cmdline, sizeof h->cmdline, "seed --fuzz");
    arena_.emplace(*h, wire::string_arena(bytes_.data(), *h));
    for (uint32_t i = 0; i < threads; ++i) {
      h->threads[i].tid = int32_t(100 + i);
      std::snprintf(h->threads[i].name, sizeof h->threads[i].name, "thread%u", i);
      h->threads[i].state.store(uint32_t(wire::SlotState::Ready));
      rings_.emplace_back(wire::ring_control(bytes_.data(), *h, i), wire::ring_data(bytes_.data(), *h, i), ring_bytes);
    }
    h->thread_count.store(threads);
  }

  wire::ProcessHeader& header() { return *reinterpret_cast<wire::ProcessHeader*>(bytes_.data()); }
  wire::RingWriter& ring(uint32_t t) { return rings_.at(t); }
  uint32_t name(const char* s) { return arena_->append(s).id; }
  void boundary(wire::BoundaryKind kind, uint64_t ticks, uint32_t window) {
    const uint32_t n = header().boundary_count.load();
    header().boundaries[n] = wire::Boundary{ticks, uint32_t(kind), window, 0};
    header().boundary_count.store(n + 1);
  }
  // A consumer that read `bytes` of thread t's ring already.
  void consumed(uint32_t t, uint64_t bytes) { wire::ring_control(bytes_.data(), header(), t)->tail.store(bytes); }

  // Non-zero runs of the region, as segments.
  std::vector<uint8_t> dump(uint8_t flags, uint64_t horizon) const {
    std::vector<uint8_t> out(fuzz::kPreambleBytes);
    out[0] = flags;
    std::memcpy(out.data() + 1, &horizon, 8);
    size_t at = 0;
    while (at < bytes_.size()) {
      while (at < bytes_.size() && bytes_[at] == 0) ++at;
      if (at == bytes_.size()) break;
      size_t end = at, zeros = 0;
      // A run ends after 64 zero bytes, or at the segment's size limit.
      while (end < bytes_.size() && zeros < 64 && end - at < 0xffff) {
        zeros = bytes_[end] == 0 ? zeros + 1 : 0;
        ++end;
      }
      end -= zeros;
      fuzz::append_segment(out, uint32_t(at), bytes_.data() + at, uint16_t(end - at));
      at = end;
    }
    return out;
  }

 private:
  std::vector<uint8_t> bytes_;
  std::optional<wire::StringArenaWriter> arena_;
  std::vector<wire::RingWriter> rings_;
};

void op(SeedRegion& r, uint32_t t, const char* name, uint64_t handle, uint64_t begin, uint64_t end, bool shapes) {
  wire::OpBeginPayload p{};
  p.handle = handle;
  p.seq_nr = int64_t(handle);
  std::array<uint8_t, 64> buf{};
  size_t n = 0;
  if (shapes) {
    shapes::Encoder enc(buf.data(), buf.size());
    const int64_t dims[] = {4, 3};
    enc.tensor(6, dims);
    enc.scalar();
    enc.tensor_list(2);
    n = enc.size();
    p.flags = wire::kOpHasShapes;
    p.shapes_bytes = uint16_t(n);
  }
  wire::emit(r.ring(t), wire::RecordType::OpBegin, r.name(name), begin, p, std::span<const uint8_t>(buf.data(), n));
  wire::emit(r.ring(t), wire::RecordType::OpEnd, 0, end, wire::OpEndPayload{handle});
}

void write(const std::string& dir, const char* file, const std::vector<uint8_t>& bytes) {
  std::ofstream out(dir + "/" + file, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  std::printf("%s/%s: %zu bytes\n", dir.c_str(), file, bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  using wire::BoundaryKind;
  using wire::RecordType;

  {  // Ranges, marks and steps of two threads in one open window.
    SeedRegion r(4096, 2);
    r.boundary(BoundaryKind::WindowBegin, 0, 0);
    for (uint32_t t = 0; t < 2; ++t) {
      wire::emit(r.ring(t), RecordType::Step, 0, 10 + t);
      wire::emit(r.ring(t), RecordType::RangePush, r.name("outer"), 20);
      wire::emit(r.ring(t), RecordType::RangePush, r.name("inner"), 30);
      wire::emit(r.ring(t), RecordType::Mark, r.name("mark"), 35);
      wire::emit(r.ring(t), RecordType::RangePop, 0, 40);
      wire::emit(r.ring(t), RecordType::RangePop, 0, 50);
      wire::emit(r.ring(t), RecordType::Step, 1, 60);
      wire::emit(r.ring(t), wire::kReservedRecordType, r.name("renamed"), 70);  // skipped
    }
    write(dir, "ranges_marks_steps", r.dump(0, UINT64_MAX));
    write(dir, "ranges_marks_steps_session_tsc", r.dump(fuzz::kThroughSession | fuzz::kTscClock, UINT64_MAX));
  }
  {  // Ops with shapes, nested, one async; three windows, a horizon inside the second.
    SeedRegion r(4096, 3);
    r.boundary(BoundaryKind::WindowBegin, 100, 0);
    r.boundary(BoundaryKind::WindowEnd, 200, 0);
    r.boundary(BoundaryKind::WindowBegin, 300, 1);
    r.boundary(BoundaryKind::WindowEnd, 400, 1);
    r.boundary(BoundaryKind::WindowBegin, 500, 2);
    op(r, 0, "aten::linear", 1, 110, 190, true);
    op(r, 1, "aten::add", 2, 150, 350, false);  // begins in window 0, ends in 1
    op(r, 2, "aten::mm", 3, 310, 390, true);
    wire::emit(r.ring(0), RecordType::Step, 7, 305);
    op(r, 0, "aten::relu", 4, 520, 530, true);
    write(dir, "ops_windows", r.dump(fuzz::kTwoRounds, 360));
  }
  {  // A small ring that wrapped (a Pad at its end) and dropped.
    SeedRegion r(256, 1);
    r.boundary(BoundaryKind::WindowBegin, 0, 0);
    for (uint64_t i = 0; i < 10; ++i) wire::emit(r.ring(0), RecordType::Mark, r.name("m"), 10 + i);
    r.consumed(0, 160);  // the launcher read ten marks: the next ones wrap
    for (uint64_t i = 0; i < 30; ++i) op(r, 0, "aten::wrap", 100 + i, 100 + 2 * i, 101 + 2 * i, false);
    write(dir, "wrapped_dropped", r.dump(0, UINT64_MAX));
  }
  {  // A corrupt record: size 0 where a record was expected.
    SeedRegion r(4096, 1);
    r.boundary(BoundaryKind::WindowBegin, 0, 0);
    wire::emit(r.ring(0), RecordType::Mark, r.name("before"), 10);
    const wire::RecordHeader bad{uint16_t(RecordType::RangePush), 0, 1, 20};
    uint8_t* p = r.ring(0).reserve(16);
    std::memcpy(p, &bad, sizeof bad);
    r.ring(0).commit(16);
    wire::emit(r.ring(0), RecordType::Mark, r.name("after"), 30);
    write(dir, "corrupt_record", r.dump(0, UINT64_MAX));
  }
  {  // A header exactly as written, validated as is.
    SeedRegion r(1024, 1);
    r.boundary(BoundaryKind::WindowBegin, 0, 0);
    wire::emit(r.ring(0), RecordType::Mark, r.name("raw"), 10);
    write(dir, "raw_layout", r.dump(fuzz::kRawLayout, UINT64_MAX));
  }
  return 0;
}
