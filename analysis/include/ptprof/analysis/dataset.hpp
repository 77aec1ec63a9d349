// `ptprof export --parquet`'s C++ side (docs/dataset.md): one trace file's
// tables (processes, threads, steps, ops, gpu, cuda_api, memory,
// collectives, stacks) as a columnar hand-off, raw little-endian column files
// and a manifest, that the Python side (python/ptprof/dataset/__main__.py) maps
// into Arrow arrays without parsing and writes as Parquet with pyarrow. No
// Parquet is written here.
#pragma once
#include <cstdint>
#include <string>

#include "ptprof/status.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::dataset {

// The dataset's schema version (docs/dataset.md): a column added, renamed or
// retyped changes it.
inline constexpr int kSchemaVersion = 4;

// Writes the tables of trace `t`, read from `path` as the `ordinal`-th file of
// the export (op, stack and other ids are unique across the export through
// it), into directory `dir`, which must not exist; its manifest.json last.
Status write_columns(const std::string& path, uint32_t ordinal, const trace::Trace& t, const std::string& dir);

}  // namespace ptprof::dataset
