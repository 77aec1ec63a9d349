#include "format/crc32c.hpp"

#include <array>
#include <cstring>

namespace ptprof::format::detail {
namespace {

// Slicing-by-8 tables: eight bytes per step keeps checksumming well below the
// cost of decompression when reading 10M-event files.
struct Tables {
  std::array<std::array<uint32_t, 256>, 8> t{};
  constexpr Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  }
};
constexpr Tables kTables;

}  // namespace

uint32_t crc32c(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  const auto& t = kTables.t;
  uint32_t crc = 0xFFFFFFFFu;
  while (size >= 8) {
    uint32_t lo = crc ^ (uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24);
    crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^ t[3][p[4]] ^
          t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
    p += 8;
    size -= 8;
  }
  while (size--) crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xff];
  return crc ^ 0xFFFFFFFFu;
}

}  // namespace ptprof::format::detail
