#include "format/cuda_chunk.hpp"

#include <algorithm>

#include "format/chunk_decode.hpp"

namespace ptprof::format::detail {

void CudaColumns::put(const trace::CudaInfo& c) {
  auto& col = columns_;
  put_varint(col[kCudaCorrelation], c.correlation_id);
  put_varint(col[kCudaExternal], c.external_id);
  put_varint(col[kCudaStream], c.stream);
  put_varint(col[kCudaPtr], c.ptr);
  put_varint(col[kCudaBytes], c.bytes);
  put_varint(col[kCudaGraphNode], c.graph_node_id);
  for (int i = 0; i < 3; ++i) {
    put_varint(col[kCudaGridX + i], c.grid[i]);
    put_varint(col[kCudaBlockX + i], c.block[i]);
  }
  put_svarint(col[kCudaDevice], c.device);
  put_svarint(col[kCudaResult], c.result);
  put_varint(col[kCudaKernelName], c.kernel_name);
  put_varint(col[kCudaFamily], c.family);
  put_varint(col[kCudaCopyKind], c.copy_kind);
  put_varint(col[kCudaGraphId], c.graph_id);
  put_varint(col[kCudaGraphCapture], uint64_t(c.graph_capture));
  put_varint(col[kCudaCaptureOp], c.capture_op);
  put_varint(col[kCudaContext], c.context);
  put_varint(col[kCudaRegisters], c.registers);
  put_varint(col[kCudaStaticShared], c.static_shared);
  put_varint(col[kCudaDynamicShared], c.dynamic_shared);
  put_svarint(col[kCudaQueued], std::clamp(c.queued_ns, -kMaxAbsTimeNs, kMaxAbsTimeNs));  // as event times are
  put_varint(col[kCudaCbid], c.cbid);
  put_svarint(col[kCudaCuptiStart], std::clamp(c.cupti_start_ns, -kMaxAbsTimeNs, kMaxAbsTimeNs));
  put_svarint(col[kCudaCuptiEnd], std::clamp(c.cupti_end_ns, -kMaxAbsTimeNs, kMaxAbsTimeNs));
}

std::string CudaColumns::take(uint32_t first, uint32_t count) {
  std::string raw;
  put_varint(raw, first);
  put_varint(raw, count);
  put_varint(raw, kCudaColumnsWritten);
  for (const auto& c : columns_) put_varint(raw, c.size());
  for (auto& c : columns_) {
    raw += c;
    c.clear();
  }
  return raw;
}

Status decode_cuda(Cursor c, trace::Trace& t) {
  uint64_t count = 0;
  PTPROF_RETURN_IF_ERROR(check_first(c, t.cuda.size(), "CUDA", count));
  uint64_t ncols = c.varint();
  if (!c.ok()) return Status::error(kTruncatedPayload);
  if (ncols < kCudaColumns)
    return Status::error("CUDA chunk has " + std::to_string(ncols) + " columns, expected " +
                         std::to_string(unsigned(kCudaColumns)));
  if (ncols > c.remaining()) return Status::error("CUDA chunk claims " + std::to_string(ncols) + " columns");
  // Every record takes at least one byte in each column.
  if (count > c.remaining() / kCudaColumns)
    return Status::error("CUDA chunk claims " + std::to_string(count) + " records in " + std::to_string(c.remaining()) +
                         " bytes");
  std::array<uint64_t, kCudaColumnsWritten> sizes{};
  for (uint64_t i = 0; i < ncols; ++i) {
    uint64_t s = c.varint();
    if (i < kCudaColumnsWritten) sizes[i] = s;
  }
  if (!c.ok()) return Status::error(kTruncatedPayload);
  const size_t present = size_t(std::min<uint64_t>(ncols, kCudaColumnsWritten));
  std::array<Cursor, kCudaColumnsWritten> col;
  for (size_t i = 0; i < present; ++i) {
    if (sizes[i] > c.remaining()) return Status::error("CUDA column " + std::to_string(i) + " overruns the chunk");
    col[i] = c.sub(size_t(sizes[i]));
  }
  const size_t nstrings = t.strings.size();
  t.cuda.reserve(t.cuda.size() + count);
  for (uint64_t i = 0; i < count; ++i) {
    trace::CudaInfo r;
    r.correlation_id = col[kCudaCorrelation].varint();
    r.external_id = col[kCudaExternal].varint();
    r.stream = col[kCudaStream].varint();
    r.ptr = col[kCudaPtr].varint();
    r.bytes = col[kCudaBytes].varint();
    r.graph_node_id = col[kCudaGraphNode].varint();
    for (int d = 0; d < 3; ++d) {
      r.grid[d] = col[kCudaGridX + d].varint32();
      r.block[d] = col[kCudaBlockX + d].varint32();
    }
    int64_t device = col[kCudaDevice].svarint();
    int64_t result = col[kCudaResult].svarint();
    uint64_t name = col[kCudaKernelName].varint();
    uint64_t family = col[kCudaFamily].varint();
    uint64_t copy_kind = col[kCudaCopyKind].varint();
    if (!fits_i32(device) || !fits_i32(result) || family > UINT8_MAX || copy_kind > UINT8_MAX)
      return Status::error("CUDA record " + std::to_string(t.cuda.size()) + " has a value out of range");
    if (name >= nstrings)
      return Status::error("CUDA record " + std::to_string(t.cuda.size()) + " names string " + std::to_string(name) +
                           " of " + std::to_string(nstrings));
    r.device = int32_t(device);
    r.result = int32_t(result);
    r.kernel_name = uint32_t(name);
    r.family = uint8_t(family);
    r.copy_kind = uint8_t(copy_kind);
    if (present > kCudaGraphId) {
      uint64_t graph_id = col[kCudaGraphId].varint();
      if (graph_id > UINT32_MAX)
        return Status::error("CUDA record " + std::to_string(t.cuda.size()) + " has a value out of range");
      r.graph_id = uint32_t(graph_id);
    }
    if (present > kCudaGraphCapture) {
      const uint64_t capture = col[kCudaGraphCapture].varint();
      const uint64_t op = present > kCudaCaptureOp ? col[kCudaCaptureOp].varint() : 0;
      if (capture > uint64_t(trace::GraphCapture::Outside) || op >= nstrings)
        return Status::error("CUDA record " + std::to_string(t.cuda.size()) + " has a value out of range");
      r.graph_capture = trace::GraphCapture(capture);
      r.capture_op = uint32_t(op);
    }
    // The launch facts: each column read where the file has it (0 otherwise).
    auto optional = [&](CudaColumn k) -> uint64_t { return present > k ? col[k].varint() : 0; };
    const uint64_t context = optional(kCudaContext);
    const uint64_t registers = optional(kCudaRegisters);
    const uint64_t static_shared = optional(kCudaStaticShared);
    const uint64_t dynamic_shared = optional(kCudaDynamicShared);
    const int64_t queued = present > kCudaQueued ? col[kCudaQueued].svarint() : 0;
    const uint64_t cbid = optional(kCudaCbid);
    const int64_t cupti_start = present > kCudaCuptiStart ? col[kCudaCuptiStart].svarint() : 0;
    const int64_t cupti_end = present > kCudaCuptiEnd ? col[kCudaCuptiEnd].svarint() : 0;
    const auto time_out_of_range = [](int64_t ns) { return ns < -kMaxAbsTimeNs || ns > kMaxAbsTimeNs; };
    if (context > UINT32_MAX || registers > UINT32_MAX || static_shared > UINT32_MAX || dynamic_shared > UINT32_MAX ||
        cbid > UINT32_MAX || time_out_of_range(queued) || time_out_of_range(cupti_start) ||
        time_out_of_range(cupti_end))
      return Status::error("CUDA record " + std::to_string(t.cuda.size()) + " has a value out of range");
    r.context = uint32_t(context);
    r.registers = uint32_t(registers);
    r.static_shared = uint32_t(static_shared);
    r.dynamic_shared = uint32_t(dynamic_shared);
    r.queued_ns = queued;
    r.cbid = uint32_t(cbid);
    r.cupti_start_ns = cupti_start;
    r.cupti_end_ns = cupti_end;
    t.cuda.push_back(r);
  }
  for (size_t i = 0; i < present; ++i) {
    if (!col[i].ok()) return Status::error("CUDA column " + std::to_string(i) + " ends early or is malformed");
    if (!col[i].at_end()) return Status::error("CUDA column " + std::to_string(i) + " has trailing bytes");
  }
  return {};
}

}  // namespace ptprof::format::detail
