// The collector's memory ledger (launcher/collect/memory_ledger.hpp): frees
// find their allocations whichever window saw them, CUDA segments get their
// size and device back on their free and carry the device totals, and a
// booked event is written with its ops' names in the file.
#include <catch2/catch.hpp>

#include "collect/memory_ledger.hpp"
#include "collector_fixtures.hpp"

using ptprof::launcher::BlockOwner;
using ptprof::launcher::LedgerEntry;
using ptprof::launcher::MemoryLedger;
using ptprof::wire::MemorySource;
namespace trace = ptprof::trace;

namespace {

trace::MemoryInfo block(uint64_t ptr, int64_t bytes, int8_t device_type = trace::kDeviceCpu, int8_t device = -1,
                        int64_t total = 0) {
  trace::MemoryInfo m;
  m.ptr = ptr;
  m.bytes = bytes;
  m.device_type = device_type;
  m.device_index = device;
  m.total_allocated = total;
  return m;
}

}  // namespace

TEST_CASE("memory ledger: a free is matched to its allocation once, on the same device", "[collector][memory]") {
  MemoryLedger ledger;
  trace::MemoryInfo alloc = block(0xa000, 4096);
  CHECK_FALSE(ledger.book(MemorySource::Torch, alloc, BlockOwner{12, 7, 1, 2}).matched);
  trace::MemoryInfo other_device = block(0xa000, -4096, trace::kDeviceCuda, 0);
  CHECK_FALSE(ledger.book(MemorySource::Torch, other_device, BlockOwner{20, 0, 0, 0}).matched);
  trace::MemoryInfo free = block(0xa000, -4096);
  const LedgerEntry entry = ledger.book(MemorySource::Torch, free, BlockOwner{30, 0, 0, 0});
  CHECK(entry.write);
  REQUIRE(entry.matched);
  CHECK(entry.allocation.ticks == 12);
  CHECK(entry.allocation.op == 7);
  CHECK(entry.allocation.shapes == 1);
  CHECK(entry.allocation.inputs == 2);
  trace::MemoryInfo again = block(0xa000, -4096);
  const LedgerEntry second = ledger.book(MemorySource::Torch, again, BlockOwner{40, 0, 0, 0});
  CHECK(second.write);  // a free never seen allocated is still an event
  CHECK_FALSE(second.matched);
}

TEST_CASE("memory ledger: a segment's free gets its size and device, and the totals follow", "[collector][memory]") {
  MemoryLedger ledger;
  trace::MemoryInfo torch = block(0x1, 512, trace::kDeviceCuda, 1, 512);
  ledger.book(MemorySource::Torch, torch, {});
  trace::MemoryInfo seg = block(0x9000, 1 << 20, 0, 1);
  CHECK(ledger.book(MemorySource::CudaSegment, seg, BlockOwner{5, 3, 0, 0}).write);
  CHECK(seg.device_type == trace::kDeviceCuda);
  CHECK(seg.total_reserved == 1 << 20);
  CHECK(seg.total_allocated == 512);                      // torch's last total of the device
  trace::MemoryInfo seg2 = block(0x9000, 2 << 20, 0, 1);  // the same address, its free unseen
  ledger.book(MemorySource::CudaSegment, seg2, {});
  CHECK(seg2.total_reserved == 2 << 20);
  trace::MemoryInfo physical = block(0x9000, 0, 0, -1);  // a handle, not the segment's address
  CHECK_FALSE(ledger.book(MemorySource::CudaPhysical, physical, {}).write);
  trace::MemoryInfo free = block(0x9000, 0, 0, -1);  // the agent does not know the size
  const LedgerEntry entry = ledger.book(MemorySource::CudaSegment, free, BlockOwner{50, 0, 0, 0});
  CHECK(entry.write);
  CHECK(entry.matched);
  CHECK(free.bytes == -(2 << 20));
  CHECK(free.device_index == 1);
  CHECK(free.total_reserved == 0);
  trace::MemoryInfo unseen = block(0x7000, 0, 0, -1);
  CHECK_FALSE(ledger.book(MemorySource::CudaSegment, unseen, {}).write);  // its size is unknown
}

TEST_CASE("memory ledger: an event is written with its ops' names and its allocation's", "[collector][memory]") {
  ptprof::testing::StageFixture f;
  const uint32_t empty = f.region.name("aten::empty"), ones = f.region.name("aten::ones");
  const uint32_t shapes = f.shapes.intern("[[2, 2]]");
  ptprof::launcher::MemoryContext where;
  where.inner_op = empty;
  where.here = BlockOwner{30, ones, shapes, 0};
  LedgerEntry entry;
  entry.matched = true;
  entry.allocation = BlockOwner{12, ones, 0, shapes};
  ptprof::launcher::write_memory_event(f.trace, f.conv, 1, 30, block(0xa000, -64), where, entry);
  REQUIRE(f.out.events.size() == 1);
  REQUIRE(f.out.memory.size() == 1);
  const trace::Event& e = f.out.events[0];
  CHECK(e.kind == trace::EventKind::Memory);
  CHECK(e.start_ns == 30);
  CHECK(f.text(e.name) == "[memory]");
  CHECK(f.out.threads.at(e.thread).tid == 101);
  const trace::MemoryInfo& m = f.out.memory.at(e.arg - 1);
  CHECK(f.text(m.op) == "aten::empty");
  CHECK(m.op_shapes == 0);
  CHECK(f.text(m.top_op) == "aten::ones");
  CHECK(f.text(m.top_shapes) == "[[2, 2]]");
  CHECK(m.alloc_ns == 12);
  CHECK(f.text(m.alloc_op) == "aten::ones");
  CHECK(f.text(m.alloc_inputs) == "[[2, 2]]");
  CHECK(m.bytes == -64);
}
