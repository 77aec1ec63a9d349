// The FRAMES and STACKS chunks (types 11 and 12, docs/format.md): the call
// stacks that Op events reference through Event::stack.
#pragma once
#include <string>

#include "format/byte_io.hpp"
#include "ptprof/status.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::format::detail {

void put_frame_record(std::string& out, const trace::Frame& f);
void put_stack_record(std::string& out, const trace::Stack& s);
// Append a chunk's records to t.frames / t.stacks, checking every index
// against what was read so far.
Status decode_frames(Cursor c, trace::Trace& t);
Status decode_stacks(Cursor c, trace::Trace& t);

}  // namespace ptprof::format::detail
