#include "format/stack_chunk.hpp"

#include <algorithm>

#include "format/chunk_decode.hpp"

namespace ptprof::format::detail {

void put_frame_record(std::string& out, const trace::Frame& f) {
  put_varint(out, uint64_t(f.kind));
  put_varint(out, f.file);
  put_varint(out, f.function);
  put_varint(out, f.line);
  put_varint(out, f.offset);
}

void put_stack_record(std::string& out, const trace::Stack& s) {
  put_varint(out, s.frames.size());
  for (uint32_t f : s.frames) put_varint(out, f);
}

Status decode_frames(Cursor c, trace::Trace& t) {
  uint64_t count = 0;
  PTPROF_RETURN_IF_ERROR(check_first(c, t.frames.size(), "frames", count));
  const uint64_t nstrings = t.strings.size();
  t.frames.reserve(t.frames.size() + count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t kind = c.varint(), file = c.varint(), function = c.varint(), line = c.varint();
    const uint64_t offset = c.varint();
    if (!c.ok()) return Status::error(std::string("frames chunk: ") + kTruncatedPayload);
    if (kind > uint64_t(trace::FrameKind::Native) || line > UINT32_MAX)
      return Status::error("frame " + std::to_string(t.frames.size()) + " has an invalid kind or line");
    if (std::max(file, function) >= nstrings)
      return Status::error("frame " + std::to_string(t.frames.size()) + " names string " +
                           std::to_string(std::max(file, function)) + " of " + std::to_string(nstrings));
    t.frames.push_back(
        trace::Frame{trace::FrameKind(kind), uint32_t(file), uint32_t(function), uint32_t(line), offset});
  }
  if (!c.at_end()) return Status::error("frames chunk has trailing bytes");
  return {};
}

Status decode_stacks(Cursor c, trace::Trace& t) {
  uint64_t count = 0;
  PTPROF_RETURN_IF_ERROR(check_first(c, t.stacks.size(), "stacks", count));
  const uint64_t nframes = t.frames.size();
  t.stacks.reserve(t.stacks.size() + count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t n = c.varint();
    if (!c.ok() || n > c.remaining()) return Status::error(std::string("stacks chunk: ") + kTruncatedPayload);
    trace::Stack s;
    s.frames.reserve(n);
    for (uint64_t k = 0; k < n; ++k) {
      const uint64_t f = c.varint();
      if (!c.ok()) return Status::error(std::string("stacks chunk: ") + kTruncatedPayload);
      if (f >= nframes)
        return Status::error("stack " + std::to_string(t.stacks.size()) + " names frame " + std::to_string(f) + " of " +
                             std::to_string(nframes));
      s.frames.push_back(uint32_t(f));
    }
    t.stacks.push_back(std::move(s));
  }
  if (!c.at_end()) return Status::error("stacks chunk has trailing bytes");
  return {};
}

}  // namespace ptprof::format::detail
