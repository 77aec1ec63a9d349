#include "format/process_chunks.hpp"

#include <string_view>

#include "format/chunk_decode.hpp"
#include "ptprof/process_role.hpp"

namespace ptprof::format::detail {
namespace {

void put_process_record(std::string& out, uint32_t index, const std::string& fields) {
  put_varint(out, index);
  put_bytes(out, fields);
}

// The per-process attribute chunks (costs, ranks and host): a record count,
// then per record the index of a process already read and a length-prefixed
// body, whose fields `decode` reads; fields a later writer appends to a body
// follow these and are ignored.
template <class Decode>
Status for_each_process_record(Cursor c, trace::Trace& t, std::string_view what, Decode decode) {
  uint64_t count = c.varint();
  if (!c.ok()) return Status::error(kTruncatedPayload);
  PTPROF_RETURN_IF_ERROR(check_count(c, what, count, 1));
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t process = c.varint();
    const std::string_view body = c.str();
    if (!c.ok()) return Status::error(kTruncatedPayload);
    if (process >= t.processes.size())
      return Status::error(std::string(what) + " name process " + std::to_string(process) + " of " +
                           std::to_string(t.processes.size()));
    PTPROF_RETURN_IF_ERROR(
        decode(Cursor(reinterpret_cast<const uint8_t*>(body.data()), body.size()), t.processes[process]));
  }
  return {};
}

}  // namespace

bool put_process_attributes(std::string& out, uint32_t index, const trace::Process& p) {
  if (p.rank < 0 && p.local_rank < 0 && p.world_size < 0 && p.host.empty() && p.role == 0) return false;
  std::string fields;
  put_svarint(fields, p.rank);
  put_svarint(fields, p.local_rank);
  put_svarint(fields, p.world_size);
  put_bytes(fields, p.host);
  put_varint(fields, p.role);
  put_svarint(fields, p.role_index);
  put_process_record(out, index, fields);
  return true;
}

std::string process_records_payload(uint32_t count, const std::string& records) {
  std::string raw;
  put_varint(raw, count);
  raw += records;
  return raw;
}

std::string costs_payload(const std::map<uint32_t, std::pair<uint32_t, uint32_t>>& costs) {
  std::string records;
  for (const auto& [process, c] : costs) {
    std::string fields;
    put_varint(fields, c.first);
    put_varint(fields, c.second);
    put_process_record(records, process, fields);
  }
  return process_records_payload(uint32_t(costs.size()), records);
}

Status decode_costs(Cursor c, trace::Trace& t) {
  return for_each_process_record(c, t, "costs", [](Cursor f, trace::Process& p) -> Status {
    const uint64_t op = f.varint(), record = f.varint();
    if (!f.ok()) return Status::error(kTruncatedPayload);
    if (op > UINT32_MAX || record > UINT32_MAX) return Status::error("process cost out of range");
    p.op_cost_ps = uint32_t(op);
    p.record_cost_ps = uint32_t(record);
    return {};
  });
}

Status decode_process_attributes(Cursor c, trace::Trace& t) {
  return for_each_process_record(c, t, "process attributes", [](Cursor f, trace::Process& p) -> Status {
    const int64_t rank = f.svarint(), local_rank = f.svarint(), world_size = f.svarint();
    std::string_view host = f.str();
    if (!f.ok()) return Status::error(kTruncatedPayload);
    if (!fits_i32(rank) || !fits_i32(local_rank) || !fits_i32(world_size))
      return Status::error("process rank out of range");
    p.rank = int32_t(rank);
    p.local_rank = int32_t(local_rank);
    p.world_size = int32_t(world_size);
    p.host = std::string(host);
    // Appended fields (a file of an older ptprof has none): the role.
    if (!f.at_end()) {
      const uint64_t role = f.varint();
      const int64_t index = f.svarint();
      if (!f.ok()) return Status::error(kTruncatedPayload);
      if (role > UINT32_MAX || !fits_i32(index)) return Status::error("process role out of range");
      p.role = known_process_role(uint32_t(role));
      p.role_index = p.role != 0 ? int32_t(index) : -1;
    }
    return {};
  });
}

}  // namespace ptprof::format::detail
