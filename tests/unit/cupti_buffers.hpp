// Synthetic CUPTI activity buffers: records laid out as cupti_activity.h
// defines them, one after another at 8-byte alignment, and a stand-in for
// cuptiActivityGetNextRecord that walks them, so the agent's buffer path
// runs without CUPTI.
#pragma once
#include <cupti_activity.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace ptprof::test {

inline size_t cupti_record_size(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return sizeof(CUpti_ActivityExternalCorrelation);
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      return sizeof(CUpti_ActivityOverhead3);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return sizeof(CUpti_ActivitySynchronization2);
    default:
      return 0;
  }
}

class SyntheticBuffer {
 public:
  template <class Record>
  void add(const Record& r) {
    const size_t at = (used_ + 7) & ~size_t(7);
    bytes_.resize(at + sizeof r);
    std::memcpy(bytes_.data() + at, &r, sizeof r);
    used_ = at + sizeof r;
  }
  uint8_t* data() { return reinterpret_cast<uint8_t*>(bytes_.data()); }
  size_t size() const { return used_; }

  // cuptiActivityGetNextRecord's contract: *record null starts at the
  // beginning; CUPTI_ERROR_MAX_LIMIT_REACHED at the end.
  static CUptiResult next(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
    size_t at = 0;
    if (*record) {
      const auto* cur = reinterpret_cast<const uint8_t*>(*record);
      at = size_t(cur - buffer) + cupti_record_size((*record)->kind);
      at = (at + 7) & ~size_t(7);
    }
    if (at + sizeof(CUpti_Activity) > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    auto* next = reinterpret_cast<CUpti_Activity*>(buffer + at);
    if (cupti_record_size(next->kind) == 0 || at + cupti_record_size(next->kind) > valid)
      return CUPTI_ERROR_INVALID_KIND;
    *record = next;
    return CUPTI_SUCCESS;
  }

 private:
  std::vector<char> bytes_;
  size_t used_ = 0;
};

}  // namespace ptprof::test
