// What the launcher does with ring positions and region layouts that no
// agent writes but a damaged target can (found by tests/fuzz/fuzz_region;
// its corpus keeps the inputs): skipped and counted, never followed.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "ptprof/record.hpp"
#include "ptprof/ring.hpp"
#include "ptprof/shm_abi.hpp"

using ptprof::wire::RecordHeader;
using ptprof::wire::RecordType;
using ptprof::wire::RingControl;
using ptprof::wire::RingReader;

namespace {

// A 64-byte ring full of 16-byte marks.
struct MarkRing {
  RingControl ctl;
  alignas(8) uint8_t data[64] = {};
  MarkRing() {
    for (uint64_t i = 0; i < 4; ++i) {
      const RecordHeader h{uint16_t(RecordType::Mark), 16, 0, i};
      std::memcpy(data + 16 * i, &h, sizeof h);
    }
  }
  uint64_t drain() {
    RingReader r(&ctl, data, sizeof data);
    const uint64_t n = r.drain([](const RecordHeader&) { return true; });
    corrupt += r.corrupt_bytes();
    return n;
  }
  uint64_t corrupt = 0;
};

}  // namespace

TEST_CASE("ring: a head more than a ring ahead of the tail is skipped, not read round and round", "[ring]") {
  MarkRing ring;
  ring.ctl.head.store(uint64_t(1) << 62);
  CHECK(ring.drain() == 0);
  CHECK(ring.corrupt == 64);  // at most a ring's worth is counted
  CHECK(ring.ctl.tail.load() == ring.ctl.head.load());
  // What the producer commits next is read normally.
  ring.ctl.head.store(ring.ctl.head.load() + 16);
  CHECK(ring.drain() == 1);
}

TEST_CASE("ring: a tail off the 8-byte grid is skipped, never read as a record", "[ring]") {
  MarkRing ring;
  ring.ctl.head.store(36);
  ring.ctl.tail.store(4);
  CHECK(ring.drain() == 0);
  CHECK(ring.corrupt == 32);
  CHECK(ring.ctl.tail.load() == 36);
}

TEST_CASE("region layout: a ring size whose total would wrap round is refused", "[ring]") {
  namespace wire = ptprof::wire;
  auto h = std::make_unique<wire::ProcessHeader>();
  const uint64_t mapped = wire::region_layout(4096, 4).total_bytes;
  h->max_threads = 2;
  h->ring_bytes = uint64_t(1) << 63;  // 2 x (2^63 + 128) wraps to 256
  const wire::RegionLayout l = wire::region_layout(h->ring_bytes, h->max_threads);
  h->strings_offset = l.strings_offset;
  h->strings_capacity = l.strings_capacity;
  h->rings_offset = l.rings_offset;
  REQUIRE(l.total_bytes <= mapped);  // what the check used to trust
  CHECK(!wire::layout_matches(*h, mapped));
  // The same header with a ring that fits is accepted.
  h->ring_bytes = 4096;
  h->max_threads = 4;
  CHECK(wire::layout_matches(*h, mapped));
}
