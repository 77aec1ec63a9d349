// The trace file layout constants, shared by the writer and the reader.
// docs/format.md is the normative description; keep the two in step.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ptprof::format::detail {

// "\x89PTPROF\n": the high byte catches 7-bit transfers, the newline catches
// text-mode conversions, as PNG's signature does.
constexpr uint8_t kMagic[8] = {0x89, 'P', 'T', 'P', 'R', 'O', 'F', '\n'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kPreambleBytes = 16;  // magic, u32 version, u32 reserved
constexpr size_t kChunkHeaderBytes = 24;

enum class ChunkType : uint32_t {
  Header = 1,
  Strings = 2,
  Processes = 3,
  Threads = 4,
  Events = 5,
  Footer = 6,
  Cuda = 7,                // continues Trace::cuda (column-oriented CudaInfo records)
  GpuLanes = 8,            // marks threads as GPU lanes (Thread::device)
  Memory = 9,              // the table of trace::MemoryInfo (memory_chunk.hpp)
  ProcessAttributes = 10,  // rank, local rank, world size, host of processes
  Frames = 11,             // continues Trace::frames (stack_chunk.hpp)
  Stacks = 12,             // continues Trace::stacks
  MemoryAttributes = 13,   // memory records' segment flag and concrete inputs (memory_chunk.hpp)
  Collectives = 14,        // continues Trace::collectives (collective_chunk.hpp)
  Costs = 15,              // per-event costs the processes measured (Process::op_cost_ps, record_cost_ps)
  Tensors = 16,            // continues Trace::tensor_groups (tensor_chunk.hpp)
};

enum ChunkFlags : uint32_t {
  kChunkZstd = 1u << 0,  // payload is one zstd frame of raw_size bytes
};

// A chunk payload bigger than this is damage, not data: it bounds what a
// corrupted length can make the reader allocate.
constexpr uint32_t kMaxChunkRawBytes = 256u << 20;

// Event chunk columns, in payload order. Readers require the first
// kEventColumns and skip any extra columns a later writer appends.
enum EventColumn : uint32_t {
  kColThread = 0,
  kColKind,
  kColName,
  kColStart,
  kColDuration,
  kColScope,
  kColFlags,
  kColShapes,
  kColSeqNr,
  kColFwdThread,
  kColArg,
  kColStack,  // optional: files written before stacks have 11 columns
  kEventColumns,
};
constexpr uint32_t kEventColumnsRequired = kColStack;

// kColKind: low 4 bits the EventKind, bit 4 set when a kColSeqNr entry
// follows for the event (its seq_nr is not -1).
constexpr uint64_t kKindMask = 0x0f;
constexpr uint64_t kKindHasSeqNr = 0x10;

// CUDA chunk columns (one per CudaInfo field), in payload order. Readers
// require the first kCudaColumns, read the optional ones after them when a
// chunk has them (files of earlier writers do not) and skip any further.
enum CudaColumn : uint32_t {
  kCudaCorrelation = 0,
  kCudaExternal,
  kCudaStream,
  kCudaPtr,
  kCudaBytes,
  kCudaGraphNode,
  kCudaGridX,
  kCudaGridY,
  kCudaGridZ,
  kCudaBlockX,
  kCudaBlockY,
  kCudaBlockZ,
  kCudaDevice,
  kCudaResult,
  kCudaKernelName,
  kCudaFamily,
  kCudaCopyKind,
  kCudaColumns,
  kCudaGraphId = kCudaColumns,  // optional
  kCudaGraphCapture,            // optional (with kCudaCaptureOp)
  kCudaCaptureOp,               // optional
  kCudaContext,                 // optional, and the five after it
  kCudaRegisters,
  kCudaStaticShared,
  kCudaDynamicShared,
  kCudaQueued,
  kCudaCbid,
  kCudaCuptiStart,  // optional, with kCudaCuptiEnd
  kCudaCuptiEnd,
  kCudaColumnsWritten,
};

// Event kinds whose arg is 1 + an index into Trace::cuda (0: none).
constexpr bool kind_has_cuda_info(uint64_t kind) { return kind >= 5 && kind <= 11; }

// Event times are ns of a monotonic clock: 2^61 ns is 73 years either side
// of its zero, so that any difference or sum of two fits an int64. Readers
// refuse times beyond it; the writer clamps them (from a garbled ring) so that
// it never writes a file ptprof cannot read.
constexpr int64_t kMaxAbsTimeNs = int64_t(1) << 61;

constexpr uint32_t kEventsPerChunk = 64 * 1024;
constexpr uint32_t kCudaPerChunk = 64 * 1024;
constexpr size_t kMetadataChunkBytes = 1u << 20;  // split string tables near this size
constexpr int kZstdLevel = 3;

}  // namespace ptprof::format::detail
