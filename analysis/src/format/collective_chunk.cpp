#include "format/collective_chunk.hpp"

#include <algorithm>

#include "format/chunk_decode.hpp"

namespace ptprof::format::detail {

void put_collective_record(std::string& out, const trace::CollectiveInfo& c) {
  std::string fields;
  put_varint(fields, c.thread);
  put_svarint(fields, c.start_ns);
  put_varint(fields, c.name);
  put_varint(fields, c.process_group);
  put_varint(fields, c.process_group_desc);
  put_varint(fields, c.dtype);
  put_svarint(fields, c.seq);
  put_svarint(fields, c.in_elements);
  put_svarint(fields, c.out_elements);
  put_svarint(fields, c.group_size);
  put_svarint(fields, c.rank);
  put_varint(out, fields.size());
  out += fields;
}

std::string collectives_payload(uint32_t count, const std::string& records) {
  std::string out;
  put_varint(out, count);
  out += records;
  return out;
}

Status decode_collectives(Cursor c, trace::Trace& t) {
  const uint64_t count = c.varint();
  // A record is its size and 11 fields, a byte at least each.
  if (!c.ok() || count > c.remaining() / 12) return Status::error("collectives chunk: malformed count");
  const uint64_t nstrings = t.strings.size();
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t size = c.varint();
    if (!c.ok() || size > c.remaining())
      return Status::error("collectives chunk: a record runs past the payload or holds a malformed varint");
    // The fields this version knows; later versions may append more.
    Cursor f = c.sub(size);
    trace::CollectiveInfo info;
    const uint64_t thread = f.varint();
    info.start_ns = f.svarint();
    const uint64_t name = f.varint(), group = f.varint(), desc = f.varint(), dtype = f.varint();
    info.seq = f.svarint();
    info.in_elements = f.svarint();
    info.out_elements = f.svarint();
    const int64_t group_size = f.svarint(), rank = f.svarint();
    const std::string which = "collective record " + std::to_string(t.collectives.size());
    if (!f.ok()) return Status::error(which + " is cut short");
    if (thread >= t.threads.size())
      return Status::error(which + " names thread " + std::to_string(thread) + " of " +
                           std::to_string(t.threads.size()));
    if (std::max({name, group, desc, dtype}) >= nstrings)
      return Status::error(which + " names string " + std::to_string(std::max({name, group, desc, dtype})) + " of " +
                           std::to_string(nstrings));
    if (group_size < INT32_MIN || group_size > INT32_MAX || rank < INT32_MIN || rank > INT32_MAX)
      return Status::error(which + " has a group size or rank out of range");
    info.thread = uint32_t(thread);
    info.name = uint32_t(name);
    info.process_group = uint32_t(group);
    info.process_group_desc = uint32_t(desc);
    info.dtype = uint32_t(dtype);
    info.group_size = int32_t(group_size);
    info.rank = int32_t(rank);
    t.collectives.push_back(info);
  }
  if (!c.at_end()) return Status::error("collectives chunk has trailing bytes");
  return {};
}

}  // namespace ptprof::format::detail
