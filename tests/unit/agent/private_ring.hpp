// A ring in the test's own memory for the agent's layers to write into, and
// what they wrote, record by record (type and arg; the payload's first bytes).
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "ptprof/record.hpp"
#include "ptprof/ring.hpp"

namespace ptprof::agent::testing {

struct WrittenRecord {
  wire::RecordType type;
  uint32_t arg;
  uint64_t ts;
  std::vector<uint8_t> payload;

  template <class Payload>
  Payload as() const {
    Payload p{};
    std::memcpy(&p, payload.data(), std::min(sizeof p, payload.size()));
    return p;
  }
};

class PrivateRing {
 public:
  static constexpr uint64_t kBytes = 1u << 16;
  PrivateRing() : data_(std::make_unique<uint8_t[]>(kBytes)) {}
  wire::RingWriter writer() { return wire::RingWriter(&ctl_, data_.get(), kBytes); }
  // Everything written since the last call, pads left out.
  std::vector<WrittenRecord> take() {
    std::vector<WrittenRecord> out;
    wire::RingReader(&ctl_, data_.get(), kBytes).drain([&](const wire::RecordHeader& h) {
      if (h.type == uint16_t(wire::RecordType::Pad)) return true;
      const auto* body = reinterpret_cast<const uint8_t*>(&h) + sizeof h;
      out.push_back({wire::RecordType(h.type), h.arg, h.ts, std::vector<uint8_t>(body, body + (h.size - sizeof h))});
      return true;
    });
    return out;
  }
  uint64_t dropped() const { return ctl_.dropped.load(); }

 private:
  wire::RingControl ctl_;
  std::unique_ptr<uint8_t[]> data_;
};

}  // namespace ptprof::agent::testing
