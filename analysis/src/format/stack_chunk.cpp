#include "format/stack_chunk.hpp"

#include <algorithm>
#include <functional>

#include "format/chunk_decode.hpp"
#include "format/format_layout.hpp"

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

size_t StackTable::FrameHash::operator()(const trace::Frame& f) const {
  return std::hash<uint64_t>{}(f.offset ^ (uint64_t(f.file) << 32 | f.function) ^ (uint64_t(f.line) << 40) ^
                               uint64_t(f.kind));
}

size_t StackTable::StackHash::operator()(const std::vector<uint32_t>& s) const {
  uint64_t h = s.size();
  for (uint32_t f : s) h = (h ^ f) * 0x9e3779b97f4a7c15ull;
  return size_t(h ^ (h >> 29));
}

uint32_t StackTable::add(const std::vector<trace::Frame>& frames) {
  std::vector<uint32_t> ids;
  ids.reserve(frames.size());
  for (const trace::Frame& f : frames) {
    auto [it, inserted] = frame_ids_.try_emplace(f, frames_.first + frames_.count);
    if (inserted) {
      put_frame_record(frames_.records, f);
      ++frames_.count;
    }
    ids.push_back(it->second);
  }
  auto [it, inserted] = stack_ids_.try_emplace(ids, stacks_.first + stacks_.count + 1);
  if (inserted) {
    put_stack_record(stacks_.records, trace::Stack{it->first});
    ++stacks_.count;
  }
  return it->second;
}

bool StackTable::full() const { return stacks_.records.size() + frames_.records.size() >= kMetadataChunkBytes; }

std::pair<std::string, std::string> StackTable::take() {
  return {frames_.empty() ? std::string() : frames_.take(), stacks_.empty() ? std::string() : stacks_.take()};
}

}  // namespace ptprof::format::detail
