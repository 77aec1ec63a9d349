// The part of a GPU replay plan (tests/replay/replay_plan.py; the format is
// /work/notes/replay-spec.md, "Plan file") that the stand-in CUPTI needs: the
// runtime/driver calls by correlation and the GPU work, each with its plan
// times (ns from the plan's t0). Read once; never changed afterwards, so the
// CUPTI entry points read it without a lock.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace replay_cupti {

enum class WorkKind : uint8_t { Kernel, Memcpy, Memset, Sync };

struct PlanCall {
  bool driver = false;  // else a runtime call
  uint32_t cbid = 0;
  uint32_t correlation = 0;
  int64_t start = 0, end = 0;
  const char* name = "";  // into Plan::names_
};

// One kernel, copy, set or synchronization, with the attrs the plan gives
// (absent ones keep these defaults).
struct PlanWork {
  WorkKind kind = WorkKind::Kernel;
  uint32_t correlation = 0;
  int64_t start = 0, end = 0;
  int64_t device = -1, context = -1, stream = -1;
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  uint16_t registers = 0;
  int32_t static_smem = 0, dynamic_smem = 0;
  uint64_t bytes = 0;
  uint8_t copy_kind = 0, src_kind = 0, dst_kind = 0;
  uint32_t value = 0;
  bool has_queued = false, has_submitted = false;
  int64_t queued = 0, submitted = 0;  // plan times
  uint32_t sync_type = 0;
  bool has_event = false;
  uint32_t event = 0;
  uint64_t graph_node = 0;
  uint32_t graph = 0;
  const char* name = "";  // into Plan::names_: stable for the process (the agent keeps kernel name pointers)
};

class Plan {
 public:
  // Reads `path`; on failure `error` says where and why, and the plan is
  // left empty (a stand-in that delivers nothing).
  bool read(const std::string& path, std::string& error);

  const PlanCall* call(uint32_t correlation) const;
  // The work of a correlation that has a call line (indices into work()).
  const std::vector<size_t>* work_of(uint32_t correlation) const;
  // Work of correlation 0, or of a correlation no call line has.
  const std::vector<size_t>& orphan_work() const { return orphans_; }
  const std::vector<PlanWork>& work() const { return work_; }
  // CUPTI's name of an API function by (driver?, cbid), from the trace's
  // name of it (cuptiGetCallbackName's answer), or null.
  const char* api_name(bool driver, uint32_t cbid) const;

  size_t calls() const { return calls_.size(); }
  size_t devices() const { return devices_; }
  size_t duplicate_correlations() const { return duplicates_; }

 private:
  const char* keep(std::string s);
  void clear();

  std::deque<std::string> names_;  // a deque: growing never moves the strings
  std::unordered_map<std::string, const char*> name_index_;
  std::vector<PlanCall> calls_;
  std::unordered_map<uint32_t, size_t> call_index_;
  std::unordered_map<uint32_t, std::vector<size_t>> work_index_;
  std::vector<PlanWork> work_;
  std::vector<size_t> orphans_;
  std::map<std::pair<bool, uint32_t>, const char*> api_names_;
  size_t devices_ = 0;
  size_t duplicates_ = 0;
};

}  // namespace replay_cupti
