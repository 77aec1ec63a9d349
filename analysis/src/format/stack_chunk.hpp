// The FRAMES and STACKS chunks (types 11 and 12, docs/format.md): the call
// stacks that Op events reference through Event::stack.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/byte_io.hpp"
#include "format/pending_records.hpp"
#include "ptprof/status.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::format::detail {

void put_frame_record(std::string& out, const trace::Frame& f);
void put_stack_record(std::string& out, const trace::Stack& s);
// Append a chunk's records to t.frames / t.stacks, checking every index
// against what was read so far.
Status decode_frames(Cursor c, trace::Trace& t);
Status decode_stacks(Cursor c, trace::Trace& t);

// A writer's call stacks, deduplicated by content: each frame and each stack
// is written once, frames before the stacks that name them.
class StackTable {
 public:
  // The stack's id in the file (1-based); its new frames and, when new, the
  // stack itself join the records not yet written. The frames' strings are
  // the caller's to check.
  uint32_t add(const std::vector<trace::Frame>& frames);
  // Stacks so far: an event's stack is 0 (none) or at most this.
  uint32_t count() const { return stacks_.first + stacks_.count; }
  bool empty() const { return frames_.empty() && stacks_.empty(); }
  // Enough unwritten records for a chunk.
  bool full() const;
  // The FRAMES and STACKS payloads of the records not yet written ("" for a
  // kind with none), which then count as written.
  std::pair<std::string, std::string> take();

 private:
  struct FrameHash {
    size_t operator()(const trace::Frame& f) const;
  };
  struct StackHash {
    size_t operator()(const std::vector<uint32_t>& s) const;
  };
  std::unordered_map<trace::Frame, uint32_t, FrameHash> frame_ids_;
  std::unordered_map<std::vector<uint32_t>, uint32_t, StackHash> stack_ids_;  // -> 1 + index
  PendingRecords frames_, stacks_;
};

}  // namespace ptprof::format::detail
