#include "format/tensor_chunk.hpp"

#include "format/chunk_decode.hpp"

namespace ptprof::format::detail {

void put_tensor_group(std::string& out, const trace::TensorGroup& g) {
  std::string fields;
  put_varint(fields, g.thread);
  put_svarint(fields, g.ts_ns);
  put_varint(fields, g.owner);
  put_varint(fields, g.kind);
  put_varint(fields, g.flags);
  put_varint(fields, g.tensors.size());
  for (const trace::TensorRef& r : g.tensors) {
    put_varint(fields, r.impl);
    put_varint(fields, r.storage);
    put_varint(fields, r.nbytes);
    put_varint(fields, r.index);
    put_svarint(fields, r.device_type);
    put_svarint(fields, r.device_index);
    put_varint(fields, r.flags);
    put_varint(fields, r.role);
  }
  put_varint(out, fields.size());
  out += fields;
}

std::string tensor_groups_payload(uint32_t count, const std::string& records) {
  std::string out;
  put_varint(out, count);
  out += records;
  return out;
}

Status decode_tensor_groups(Cursor c, trace::Trace& t) {
  const uint64_t count = c.varint();
  // A group is its size and 6 fields, a byte at least each.
  if (!c.ok() || count > c.remaining() / 7) return Status::error("tensors chunk: malformed count");
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t size = c.varint();
    if (!c.ok() || size > c.remaining())
      return Status::error("tensors chunk: a group runs past the payload or holds a malformed varint");
    Cursor f = c.sub(size);
    trace::TensorGroup g;
    const uint64_t thread = f.varint();
    g.ts_ns = f.svarint();
    g.owner = f.varint();
    const uint64_t kind = f.varint(), flags = f.varint(), n = f.varint();
    const std::string which = "tensor group " + std::to_string(t.tensor_groups.size());
    // A tensor is 8 fields, a byte at least each.
    if (!f.ok() || n > f.remaining() / 8) return Status::error(which + " is cut short");
    if (thread >= t.threads.size())
      return Status::error(which + " names thread " + std::to_string(thread) + " of " +
                           std::to_string(t.threads.size()));
    if (kind > 255 || flags > 255) return Status::error(which + " has a kind or flags out of range");
    g.thread = uint32_t(thread);
    g.kind = uint8_t(kind);
    g.flags = uint8_t(flags);
    g.tensors.reserve(n);
    for (uint64_t k = 0; k < n; ++k) {
      trace::TensorRef r;
      r.impl = f.varint();
      r.storage = f.varint();
      r.nbytes = f.varint();
      const uint64_t index = f.varint();
      const int64_t dtype = f.svarint(), dindex = f.svarint();
      const uint64_t rflags = f.varint(), role = f.varint();
      if (!f.ok()) return Status::error(which + " is cut short");
      if (index > UINT16_MAX || dtype < INT8_MIN || dtype > INT8_MAX || dindex < INT8_MIN || dindex > INT8_MAX ||
          rflags > 255 || role > 255)
        return Status::error(which + " has a tensor field out of range");
      r.index = uint16_t(index);
      r.device_type = int8_t(dtype);
      r.device_index = int8_t(dindex);
      r.flags = uint8_t(rflags);
      r.role = uint8_t(role);
      g.tensors.push_back(r);
    }
    t.tensor_groups.push_back(std::move(g));
  }
  if (!c.at_end()) return Status::error("tensors chunk has trailing bytes");
  return {};
}

}  // namespace ptprof::format::detail
