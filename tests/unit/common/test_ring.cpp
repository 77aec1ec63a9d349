// RingWriter / RingReader (common/include/ptprof/ring.hpp): the SPSC byte ring
// between a target thread and the launcher. A producer thread and a consumer
// thread run over a small ring with records of varied sizes, each carrying a
// sequence number (in ts) and a checksum of its payload (in arg).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "ptprof/record.hpp"
#include "ptprof/ring.hpp"

using ptprof::wire::kMaxRecordBytes;
using ptprof::wire::RecordHeader;
using ptprof::wire::RecordType;
using ptprof::wire::RingControl;
using ptprof::wire::RingReader;
using ptprof::wire::RingWriter;

namespace {

constexpr uint16_t kTestType = 99;  // any non-Pad type: the ring does not look at it
constexpr size_t kGuard = 256;      // bytes after the buffer that must stay untouched
constexpr uint8_t kGuardByte = 0xAB;

// A ring in ordinary memory laid out as in shared memory, with a guard zone
// after the buffer to catch writes past its end.
struct TestRing {
  explicit TestRing(uint64_t capacity) : capacity(capacity) {
    ctl = std::make_unique<RingControl>();
    storage.reset(new (std::align_val_t(64)) uint8_t[capacity + kGuard]);
    std::memset(storage.get(), 0, capacity);
    std::memset(storage.get() + capacity, kGuardByte, kGuard);
  }
  RingWriter writer() { return RingWriter(ctl.get(), storage.get(), capacity); }
  RingReader reader() { return RingReader(ctl.get(), storage.get(), capacity); }
  bool guard_intact() const {
    for (size_t i = 0; i < kGuard; ++i)
      if (storage[capacity + i] != kGuardByte) return false;
    return true;
  }
  struct AlignedDelete {
    void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  uint64_t capacity;
  std::unique_ptr<RingControl> ctl;
  std::unique_ptr<uint8_t[], AlignedDelete> storage;
};

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint32_t fnv1a(const uint8_t* p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 16777619u;
  return h;
}

// Record sizes vary with the sequence number: 16 (header only) to 16 + 8*63.
uint32_t size_for(uint64_t seq, uint32_t max_payload_words = 63) {
  return static_cast<uint32_t>(sizeof(RecordHeader) + 8 * (mix(seq) % (max_payload_words + 1)));
}

// Writes record `seq` of `size` bytes; false when the ring dropped it.
bool write_record(RingWriter& w, uint64_t seq, uint32_t size) {
  uint8_t* p = w.reserve(size);
  if (!p) return false;
  uint8_t* payload = p + sizeof(RecordHeader);
  size_t n = size - sizeof(RecordHeader);
  uint64_t x = seq;
  for (size_t i = 0; i < n; i += 8) {
    x = mix(x);
    std::memcpy(payload + i, &x, 8);
  }
  RecordHeader h{kTestType, static_cast<uint16_t>(size), fnv1a(payload, n), seq};
  std::memcpy(p, &h, sizeof h);
  w.commit(size);
  return true;
}

// Whether a record read back is whole: right type and size for its sequence
// number, and its payload matches its checksum.
bool record_ok(const RecordHeader& h, uint32_t expected_size) {
  if (h.type != kTestType || h.size != expected_size) return false;
  const auto* payload = reinterpret_cast<const uint8_t*>(&h) + sizeof(RecordHeader);
  return fnv1a(payload, h.size - sizeof(RecordHeader)) == h.arg;
}

}  // namespace

TEST_CASE("ring: concurrent producer and consumer lose no committed record", "[ring]") {
  // FreeRunning: the producer writes as fast as it can (mostly drops, as a
  //   hot thread would against a slow launcher);
  // Backoff: after a drop the producer waits for the consumer to make room,
  //   so most records pass through and the ring wraps many times while both
  //   threads run;
  // ConsumerPauses: the consumer stops now and then until the producer has
  //   dropped something.
  enum Mode { FreeRunning, Backoff, ConsumerPauses };
  for (Mode mode : {FreeRunning, Backoff, ConsumerPauses}) {
    DYNAMIC_SECTION("mode " << (mode == FreeRunning ? "free running"
                                : mode == Backoff   ? "backoff"
                                                    : "consumer pauses")) {
      TestRing ring(4096);
      const uint64_t kRecords = 50000;
      std::atomic<bool> producer_done{false};
      std::vector<uint64_t> dropped_seqs;
      uint64_t producer_drop_count = 0;
      // A guard against a hang, not a time limit: instrumented, in one of
      // several test processes on two busy cores, a run took over 20 s.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);

      std::thread producer([&] {
        RingWriter w = ring.writer();
        for (uint64_t seq = 0; seq < kRecords; ++seq) {
          if (!write_record(w, seq, size_for(seq))) {
            dropped_seqs.push_back(seq);
            if (mode == Backoff) {
              // Until at least half the ring is free (room for any record and its pad).
              while (ring.ctl->head.load(std::memory_order_relaxed) - ring.ctl->tail.load(std::memory_order_acquire) >
                         ring.capacity / 2 &&
                     std::chrono::steady_clock::now() < deadline)
                std::this_thread::yield();
            }
          }
        }
        producer_drop_count = w.dropped();
        producer_done.store(true, std::memory_order_release);
      });

      RingReader r = ring.reader();
      uint64_t consumed = 0, bad = 0, out_of_order = 0, not_resumed = 0, pauses = 0;
      uint64_t next_expected_min = 0;  // sequence numbers only grow
      std::vector<bool> seen(kRecords, false);
      uint64_t refused_seq = UINT64_MAX;  // the record the visitor last refused
      uint64_t visits = 0;
      auto visit = [&](const RecordHeader& h) {
        ++visits;
        uint64_t seq = h.ts;
        if (refused_seq != UINT64_MAX) {
          if (seq != refused_seq) ++not_resumed;
          refused_seq = UINT64_MAX;
        }
        // Now and then stop early: this record must come first next time.
        if (mix(visits) % 97 == 0) {
          refused_seq = seq;
          return false;
        }
        if (seq >= kRecords || !record_ok(h, size_for(seq))) {
          ++bad;
        } else {
          if (seq < next_expected_min || seen[seq]) ++out_of_order;
          seen[seq] = true;
          next_expected_min = seq + 1;
        }
        ++consumed;
        return true;
      };
      while (true) {
        bool done = producer_done.load(std::memory_order_acquire);
        if (r.drain(visit) == 0) std::this_thread::yield();
        if (done && r.empty()) break;
        if (mode == ConsumerPauses && consumed / 1000 > pauses) {
          ++pauses;
          uint64_t before = r.dropped();
          while (r.dropped() == before && !producer_done.load(std::memory_order_acquire) &&
                 std::chrono::steady_clock::now() < deadline)
            std::this_thread::yield();
        }
        if (std::chrono::steady_clock::now() >= deadline) break;  // checked after the join
      }
      producer.join();
      REQUIRE(std::chrono::steady_clock::now() < deadline);

      INFO("consumed " << consumed << ", dropped " << r.dropped() << ", head " << ring.ctl->head.load());
      CHECK(bad == 0);
      CHECK(out_of_order == 0);
      CHECK(not_resumed == 0);
      CHECK(r.corrupt_bytes() == 0);
      CHECK(ring.guard_intact());
      // Nothing committed is lost: consumed + dropped == produced ...
      CHECK(producer_drop_count == dropped_seqs.size());
      CHECK(r.dropped() == dropped_seqs.size());
      CHECK(consumed + r.dropped() == kRecords);
      // ... and exactly the dropped sequence numbers are missing.
      std::vector<uint64_t> missing;
      for (uint64_t seq = 0; seq < kRecords; ++seq)
        if (!seen[seq]) missing.push_back(seq);
      CHECK(missing == dropped_seqs);
      CHECK(consumed > 0);
      if (mode == ConsumerPauses) CHECK(r.dropped() > 0);
      if (mode == Backoff) {
        CHECK(consumed > kRecords / 2);
        CHECK(ring.ctl->head.load() > 500 * ring.capacity);  // wrapped many times
      }
    }
  }
}

TEST_CASE("ring: wrap-around writes a Pad and never writes past the end", "[ring]") {
  TestRing ring(4096);
  RingWriter w = ring.writer();
  RingReader r = ring.reader();
  std::vector<uint64_t> got;
  auto collect = [&](const RecordHeader& h) {
    CHECK(h.type == kTestType);  // a Pad is skipped, never visited
    CHECK(record_ok(h, h.size));
    got.push_back(h.ts);
    return true;
  };

  SECTION("a record that does not fit in what is left goes to offset 0") {
    // 85 records of 48 bytes end at 4080: 16 bytes are left at the end.
    for (uint64_t seq = 0; seq < 85; ++seq) REQUIRE(write_record(w, seq, 48));
    CHECK(ring.ctl->head.load() == 4080);
    CHECK(r.drain(collect) == 85);
    REQUIRE(write_record(w, 85, 48));
    // Pad (16 bytes to the end) + the record at offset 0.
    CHECK(ring.ctl->head.load() == 4096 + 48);
    auto* pad = reinterpret_cast<const RecordHeader*>(ring.storage.get() + 4080);
    CHECK(pad->type == static_cast<uint16_t>(RecordType::Pad));
    auto* first = reinterpret_cast<const RecordHeader*>(ring.storage.get());
    CHECK(first->ts == 85);
    CHECK(r.drain(collect) == 1);
    CHECK(ring.ctl->tail.load() == 4096 + 48);
    CHECK(w.dropped() == 0);
  }
  SECTION("the smallest pad: 8 bytes left at the end") {
    // 4088 bytes: 73 records of 56 bytes.
    for (uint64_t seq = 0; seq < 73; ++seq) REQUIRE(write_record(w, seq, 56));
    CHECK(ring.ctl->head.load() == 4088);
    CHECK(r.drain(collect) == 73);
    REQUIRE(write_record(w, 73, 16));
    CHECK(ring.ctl->head.load() == 4096 + 16);
    CHECK(r.drain(collect) == 1);
    CHECK(ring.guard_intact());
  }
  SECTION("a record that fits the end exactly needs no pad") {
    for (uint64_t seq = 0; seq < 64; ++seq) REQUIRE(write_record(w, seq, 64));
    CHECK(ring.ctl->head.load() == 4096);
    CHECK(r.drain(collect) == 64);
    REQUIRE(write_record(w, 64, 64));
    CHECK(ring.ctl->head.load() == 4096 + 64);
    CHECK(r.drain(collect) == 1);
  }
  SECTION("many laps with sizes that leave every possible remainder") {
    uint64_t seq = 0;
    for (int lap = 0; lap < 400; ++lap) {
      for (int i = 0; i < 6; ++i, ++seq) REQUIRE(write_record(w, seq, size_for(seq)));
      r.drain(collect);
    }
    CHECK(ring.ctl->head.load() > 50 * 4096);
    CHECK(w.dropped() == 0);
    CHECK(ring.guard_intact());
    CHECK(r.corrupt_bytes() == 0);
  }
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == i);
  CHECK(ring.guard_intact());
}

TEST_CASE("ring: a full ring drops and counts exactly while the consumer is stopped", "[ring]") {
  TestRing ring(4096);
  RingWriter w = ring.writer();
  RingReader r = ring.reader();

  // 64 records of 64 bytes fill the ring; the next 100 are dropped.
  uint64_t seq = 0;
  for (; seq < 64; ++seq) REQUIRE(write_record(w, seq, 64));
  for (; seq < 164; ++seq) CHECK_FALSE(write_record(w, seq, 64));
  CHECK(w.dropped() == 100);
  CHECK(r.dropped() == 100);
  CHECK(ring.ctl->dropped.load() == 100);
  CHECK(ring.ctl->head.load() == 4096);  // a drop does not move head
  // Even the smallest record does not fit.
  CHECK(w.reserve(16) == nullptr);
  CHECK(r.dropped() == 101);
  // count_drop() counts an event that could not even try.
  w.count_drop();
  CHECK(r.dropped() == 102);

  std::vector<uint64_t> got;
  CHECK(r.drain([&](const RecordHeader& h) {
    CHECK(record_ok(h, 64));
    got.push_back(h.ts);
    return true;
  }) == 64);
  for (uint64_t i = 0; i < 64; ++i) CHECK(got[i] == i);
  CHECK(r.empty());

  // Space again: writing resumes, and the drop count stays.
  REQUIRE(write_record(w, 1000, 64));
  CHECK(r.dropped() == 102);
  uint64_t first = 0;
  CHECK(r.drain([&](const RecordHeader& h) {
    first = h.ts;
    return true;
  }) == 1);
  CHECK(first == 1000);

  SECTION("a writer attached later continues the counts") {
    RingWriter again = ring.writer();
    CHECK(again.dropped() == 102);
    REQUIRE(write_record(again, 1001, 32));
    CHECK(ring.ctl->head.load() == 4096 + 64 + 32);
  }
}

TEST_CASE("ring: a record that fits only without its pad is dropped", "[ring]") {
  TestRing ring(4096);
  RingWriter w = ring.writer();
  RingReader r = ring.reader();
  for (uint64_t seq = 0; seq < 85; ++seq) REQUIRE(write_record(w, seq, 48));  // head 4080
  // Consume one record: 48 bytes free at the front + 16 at the end = 64.
  int n = 0;
  r.drain([&](const RecordHeader&) { return n++ < 1; });
  CHECK(ring.ctl->tail.load() == 48);
  // 56 bytes: 16 of pad + 56 > 64, so it is dropped...
  CHECK_FALSE(write_record(w, 85, 56));
  CHECK(w.dropped() == 1);
  // ... 48 bytes: 16 of pad + 48 == 64 fits exactly.
  REQUIRE(write_record(w, 86, 48));
  CHECK(ring.ctl->head.load() == 4096 + 48);
  // The ring is now exactly full.
  CHECK_FALSE(write_record(w, 87, 16));
  CHECK(w.dropped() == 2);
  std::vector<uint64_t> got;
  r.drain([&](const RecordHeader& h) {
    CHECK(record_ok(h, h.size));
    got.push_back(h.ts);
    return true;
  });
  REQUIRE(got.size() == 85);
  CHECK(got.front() == 1);
  CHECK(got.back() == 86);
  CHECK(ring.guard_intact());
}

TEST_CASE("ring: a consumer that stops early resumes at the same record", "[ring]") {
  TestRing ring(4096);
  RingWriter w = ring.writer();
  RingReader r = ring.reader();
  for (uint64_t seq = 0; seq < 10; ++seq) REQUIRE(write_record(w, seq, size_for(seq, 8)));

  // Refuse the very first record: nothing is consumed.
  uint64_t seen = UINT64_MAX;
  CHECK(r.drain([&](const RecordHeader& h) {
    seen = h.ts;
    return false;
  }) == 0);
  CHECK(seen == 0);
  CHECK(ring.ctl->tail.load() == 0);

  // Take three, refuse the fourth.
  std::vector<uint64_t> got;
  auto take = [&](int k) {
    int taken = 0;
    return r.drain([&](const RecordHeader& h) {
      if (taken == k) {
        seen = h.ts;
        return false;
      }
      ++taken;
      got.push_back(h.ts);
      return true;
    });
  };
  CHECK(take(3) == 3);
  CHECK(seen == 3);
  CHECK(take(1) == 1);
  CHECK(seen == 4);
  CHECK(take(100) == 6);
  CHECK(got == std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(r.empty());

  SECTION("stopping at the record right after a Pad") {
    // Fill to 16 bytes before the end, then one record that wraps.
    TestRing ring2(4096);
    RingWriter w2 = ring2.writer();
    RingReader r2 = ring2.reader();
    for (uint64_t seq = 0; seq < 85; ++seq) REQUIRE(write_record(w2, seq, 48));
    r2.drain([](const RecordHeader&) { return true; });
    REQUIRE(write_record(w2, 85, 48));
    REQUIRE(write_record(w2, 86, 48));
    uint64_t refused = UINT64_MAX;
    CHECK(r2.drain([&](const RecordHeader& h) {
      refused = h.ts;
      return false;
    }) == 0);
    CHECK(refused == 85);
    std::vector<uint64_t> rest;
    CHECK(r2.drain([&](const RecordHeader& h) {
      rest.push_back(h.ts);
      return true;
    }) == 2);
    CHECK(rest == std::vector<uint64_t>{85, 86});
  }
}

TEST_CASE("ring: a corrupt record is skipped and counted, never followed", "[ring]") {
  TestRing ring(4096);
  RingWriter w = ring.writer();
  RingReader r = ring.reader();
  REQUIRE(write_record(w, 0, 32));
  REQUIRE(write_record(w, 1, 32));
  REQUIRE(write_record(w, 2, 32));
  // Damage the second record's size (not a multiple of 8).
  auto* h = reinterpret_cast<RecordHeader*>(ring.storage.get() + 32);
  h->size = 13;
  std::vector<uint64_t> got;
  CHECK(r.drain([&](const RecordHeader& rec) {
    got.push_back(rec.ts);
    return true;
  }) == 1);
  CHECK(got == std::vector<uint64_t>{0});
  CHECK(r.corrupt_bytes() == 64);
  CHECK(r.empty());
  // Later records are read normally.
  REQUIRE(write_record(w, 3, 32));
  got.clear();
  CHECK(r.drain([&](const RecordHeader& rec) {
    got.push_back(rec.ts);
    return true;
  }) == 1);
  CHECK(got == std::vector<uint64_t>{3});

  SECTION("size zero on a non-Pad record") {
    REQUIRE(write_record(w, 4, 16));
    reinterpret_cast<RecordHeader*>(ring.storage.get() + 128)->size = 0;
    CHECK(r.drain([](const RecordHeader&) { return true; }) == 0);
    CHECK(r.corrupt_bytes() == 64 + 16);
  }
  SECTION("a size running past what is committed") {
    REQUIRE(write_record(w, 4, 16));
    reinterpret_cast<RecordHeader*>(ring.storage.get() + 128)->size = 64;
    CHECK(r.drain([](const RecordHeader&) { return true; }) == 0);
    CHECK(r.corrupt_bytes() == 64 + 16);
  }
}

TEST_CASE("ring: the largest record fits a ring of its size", "[ring]") {
  TestRing ring(8192);
  RingWriter w = ring.writer();
  RingReader r = ring.reader();
  const uint32_t kMax = static_cast<uint32_t>(kMaxRecordBytes);
  REQUIRE(write_record(w, 0, 16));
  r.drain([](const RecordHeader&) { return true; });
  REQUIRE(write_record(w, 1, kMax));       // 16 .. 4112
  REQUIRE(write_record(w, 2, kMax - 16));  // 4112 .. 8192, to the end exactly
  CHECK_FALSE(write_record(w, 3, kMax));   // full
  CHECK(w.dropped() == 1);
  std::vector<uint64_t> got;
  r.drain([&](const RecordHeader& h) {
    CHECK(record_ok(h, h.size));
    got.push_back(h.ts);
    return true;
  });
  CHECK(got == std::vector<uint64_t>{1, 2});
  REQUIRE(write_record(w, 4, kMax));  // head 8192: at offset 0, no pad
  CHECK(ring.ctl->head.load() == 8192 + kMax);
  CHECK(ring.guard_intact());
}

TEST_CASE("ring: a begin is written only with room for its end, and every such end is written", "[ring]") {
  // A stopped consumer and a small ring: begins nested ever deeper with
  // instants between them until nothing fits; then every end still fits.
  for (uint32_t begin_bytes : {16u, 48u, 4096u}) {
    INFO("begin of " << begin_bytes << " bytes");
    TestRing ring(8192);
    RingWriter w = ring.writer();
    uint64_t begun = 0, refused = 0, instants_refused = 0;
    for (int i = 0; i < 2000; ++i) {
      if (uint8_t* p = w.reserve_begin(begin_bytes, 24)) {
        std::memset(p, 0, sizeof(RecordHeader));
        reinterpret_cast<RecordHeader*>(p)->type = kTestType;
        reinterpret_cast<RecordHeader*>(p)->size = uint16_t(begin_bytes);
        w.commit(begin_bytes);
        ++begun;
      } else {
        ++refused;
      }
      if (uint8_t* p = w.reserve(16)) {
        std::memset(p, 0, 16);
        reinterpret_cast<RecordHeader*>(p)->type = kTestType;
        reinterpret_cast<RecordHeader*>(p)->size = 16;
        w.commit(16);
      } else {
        ++instants_refused;
      }
    }
    REQUIRE(begun > 0);
    CHECK(refused > 0);
    CHECK(w.dropped() == refused + instants_refused);
    // Every end of an accepted begin is written, the ring still full otherwise.
    for (uint64_t i = 0; i < begun; ++i) {
      uint8_t* p = w.reserve_end(24);
      REQUIRE(p != nullptr);
      std::memset(p, 0, 24);
      reinterpret_cast<RecordHeader*>(p)->type = kTestType;
      reinterpret_cast<RecordHeader*>(p)->size = 24;
      w.commit(24);
    }
    CHECK(w.held() == 0);
    CHECK(w.dropped() == refused + instants_refused);
    CHECK(ring.guard_intact());
    uint64_t records = 0;
    RingReader r = ring.reader();
    r.drain([&](const RecordHeader&) { return ++records, true; });
    CHECK(r.corrupt_bytes() == 0);
    CHECK(records == 2 * begun + 2000 - instants_refused);
  }
}
