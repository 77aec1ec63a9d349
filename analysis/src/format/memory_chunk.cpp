#include "format/memory_chunk.hpp"

#include <algorithm>

#include "format/chunk_decode.hpp"

namespace ptprof::format::detail {

void put_memory_record(std::string& out, const trace::MemoryInfo& m) {
  put_varint(out, m.ptr);
  put_svarint(out, m.bytes);
  put_svarint(out, m.total_allocated);
  put_svarint(out, m.total_reserved);
  put_svarint(out, m.device_type);
  put_svarint(out, m.device_index);
  put_varint(out, m.op);
  put_varint(out, m.op_shapes);
  put_varint(out, m.top_op);
  put_varint(out, m.top_shapes);
  put_svarint(out, m.alloc_ns);
  put_varint(out, m.alloc_op);
  put_varint(out, m.alloc_shapes);
}

// A record's 13 fields take at least a byte each.
constexpr size_t kMinMemoryRecordBytes = 13;

Status decode_memory(Cursor c, trace::Trace& t) {
  uint64_t count = 0;
  PTPROF_RETURN_IF_ERROR(check_first(c, t.memory.size(), "memory", count, kMinMemoryRecordBytes));
  t.memory.reserve(t.memory.size() + count);
  const uint64_t nstrings = t.strings.size();
  for (uint64_t i = 0; i < count; ++i) {
    trace::MemoryInfo m;
    m.ptr = c.varint();
    m.bytes = c.svarint();
    m.total_allocated = c.svarint();
    m.total_reserved = c.svarint();
    const int64_t device_type = c.svarint();
    const int64_t device_index = c.svarint();
    const uint64_t op = c.varint(), op_shapes = c.varint();
    const uint64_t top_op = c.varint(), top_shapes = c.varint();
    m.alloc_ns = c.svarint();
    const uint64_t alloc_op = c.varint(), alloc_shapes = c.varint();
    if (!c.ok()) return Status::error(std::string("memory chunk: ") + kTruncatedPayload);
    if (device_type < INT8_MIN || device_type > INT8_MAX || device_index < INT8_MIN || device_index > INT8_MAX)
      return Status::error("memory record " + std::to_string(t.memory.size()) + " has a device out of range");
    const uint64_t most = std::max({op, op_shapes, top_op, top_shapes, alloc_op, alloc_shapes});
    if (most >= nstrings)
      return Status::error("memory record " + std::to_string(t.memory.size()) + " names string " +
                           std::to_string(most) + " of " + std::to_string(nstrings));
    m.device_type = int8_t(device_type);
    m.device_index = int8_t(device_index);
    m.op = uint32_t(op);
    m.op_shapes = uint32_t(op_shapes);
    m.top_op = uint32_t(top_op);
    m.top_shapes = uint32_t(top_shapes);
    m.alloc_op = uint32_t(alloc_op);
    m.alloc_shapes = uint32_t(alloc_shapes);
    t.memory.push_back(m);
  }
  if (!c.at_end()) return Status::error("memory chunk has trailing bytes");
  return {};
}

namespace {
constexpr uint64_t kAttrSegment = 1u << 0;
}

void put_memory_attributes(std::string& out, uint32_t* count, uint32_t index, const trace::MemoryInfo& m) {
  if (!m.segment && !m.top_inputs && !m.alloc_inputs) return;
  std::string fields;
  put_varint(fields, m.segment ? kAttrSegment : 0);
  put_varint(fields, m.top_inputs);
  put_varint(fields, m.alloc_inputs);
  put_varint(out, index);
  put_varint(out, fields.size());
  out += fields;
  ++*count;
}

std::string memory_attributes_payload(uint32_t count, const std::string& records) {
  std::string out;
  put_varint(out, count);
  out += records;
  return out;
}

Status decode_memory_attributes(Cursor c, trace::Trace& t) {
  const uint64_t count = c.varint();
  if (!c.ok() || count > c.remaining()) return Status::error("memory attributes chunk: malformed count");
  const uint64_t nstrings = t.strings.size();
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t index = c.varint();
    const uint64_t size = c.varint();
    if (!c.ok() || size > c.remaining())
      return Status::error("memory attributes chunk: a record runs past the payload or holds a malformed varint");
    if (index >= t.memory.size())
      return Status::error("memory attributes chunk names record " + std::to_string(index) + " of " +
                           std::to_string(t.memory.size()));
    // The fields this version knows; later versions may append more.
    Cursor f = c.sub(size);
    const uint64_t flags = f.varint();
    const uint64_t top_inputs = f.varint();
    const uint64_t alloc_inputs = f.varint();
    if (!f.ok()) return Status::error("memory attributes record " + std::to_string(index) + " is cut short");
    if (std::max(top_inputs, alloc_inputs) >= nstrings)
      return Status::error("memory attributes record " + std::to_string(index) + " names string " +
                           std::to_string(std::max(top_inputs, alloc_inputs)) + " of " + std::to_string(nstrings));
    trace::MemoryInfo& m = t.memory[index];
    m.segment = (flags & kAttrSegment) != 0;
    m.top_inputs = uint32_t(top_inputs);
    m.alloc_inputs = uint32_t(alloc_inputs);
  }
  if (!c.at_end()) return Status::error("memory attributes chunk has trailing bytes");
  return {};
}

bool memory_ref_ok(const trace::Event& e, const trace::Trace& t) {
  return e.kind != trace::EventKind::Memory || (e.arg >= 1 && e.arg <= t.memory.size());
}

}  // namespace ptprof::format::detail
