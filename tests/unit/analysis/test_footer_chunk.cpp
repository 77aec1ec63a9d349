// The FOOTER chunk's bytes (docs/format.md): written from the losses ledger's
// one field list (trace.hpp), they must stay what the format page says, in
// its order, and files written before a generation of fields existed must
// still read.
#include <catch2/catch.hpp>
#include <string>

#include "format/footer_chunk.hpp"

using namespace ptprof;
using format::detail::Cursor;
using format::detail::decode_footer;
using format::detail::encode_footer;
using format::detail::FooterData;

namespace {

Cursor cursor(const std::string& s, size_t cut = 0) {
  return Cursor(reinterpret_cast<const uint8_t*>(s.data()), s.size() - cut);
}

FooterData sample() {
  FooterData f;
  f.thread_events = {3, 4};
  f.thread_dropped = {1, 0};
  f.window_end_ns = -5;
  // Named one by one, not through the field list, so that the list is what is tested.
  trace::Losses& l = f.losses;
  l.unnamed_events = 101;
  l.names_refused = 102;
  l.lost_threads = 103;
  l.lost_thread_events = 104;
  l.late_events = 105;
  l.malformed_bytes = 106;
  l.shm_short_threads = 107;
  l.shm_small_rings = 108;
  l.shm_short_names = 300;  // two varint bytes: 0xAC 0x02
  return f;
}

}  // namespace

TEST_CASE("footer: counts, totals, window end, then the ledger in format.md's order", "[format][losses]") {
  const FooterData f = sample();
  const std::string bytes = encode_footer(f);
  // threads 2: (3, 1) (4, 0); totals 7, 1; zigzag(-5) = 9; the ledger.
  const std::string expected(
      "\x02\x03\x01\x04\x00\x07\x01\x09"
      "\x65\x66\x67\x68\x69\x6a"  // unnamed .. malformed_bytes (generation 1)
      "\x6b\x6c\xac\x02",         // shm_short_threads .. shm_short_names (generation 2)
      18);
  CHECK(bytes == expected);

  FooterData back;
  REQUIRE(decode_footer(cursor(bytes), back).ok());
  CHECK(back.losses == f.losses);
  CHECK(back.thread_events == f.thread_events);
  CHECK(back.thread_dropped == f.thread_dropped);
  CHECK(back.total_events == 7);
  CHECK(back.total_dropped == 1);
  CHECK(back.window_end_ns == -5);
}

TEST_CASE("footer: a file from before a generation of the ledger reads it as zero", "[format][losses]") {
  const FooterData f = sample();
  const std::string bytes = encode_footer(f);

  FooterData before_shm;  // written before the /dev/shm counts: generation 1 only
  REQUIRE(decode_footer(cursor(bytes, 4), before_shm).ok());
  trace::Losses first = f.losses;
  first.shm_short_threads = first.shm_small_rings = first.shm_short_names = 0;
  CHECK(before_shm.losses == first);

  FooterData before_ledger;  // written before the ledger
  REQUIRE(decode_footer(cursor(bytes, 10), before_ledger).ok());
  CHECK(before_ledger.losses == trace::Losses{});
  CHECK(before_ledger.window_end_ns == -5);

  // Cut inside a generation: damage, said.
  for (size_t cut : {1, 5, 9}) {
    FooterData cut_short;
    const Status s = decode_footer(cursor(bytes, cut), cut_short);
    INFO("cut " << cut);
    CHECK_FALSE(s.ok());
    CHECK(s.message().find("payload ends") != std::string::npos);
  }
}
