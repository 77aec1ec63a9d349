// CRC-32C (Castagnoli), the checksum of every chunk in a trace file. Chosen
// over CRC-32/zlib for its better error detection on short bursts and because
// it is what SSE4.2/ARMv8 compute in hardware, should reading ever need it.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ptprof::format::detail {

// Reflected polynomial 0x82F63B78, initial value 0xFFFFFFFF, final XOR
// 0xFFFFFFFF: crc32c("123456789") == 0xE3069283.
uint32_t crc32c(const void* data, size_t size);

}  // namespace ptprof::format::detail
