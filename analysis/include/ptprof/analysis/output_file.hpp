// The one writer of the files ptprof makes besides its traces: the exports,
// `report --html`, `memory --timeline`, `flamegraph -o`. A file is written
// under `path + ".tmp"` and renamed by finish(), so a file under its final
// name is complete; it is never written through a symlink someone planted;
// it is gzip-compressed when the name ends in ".gz". Writes are buffered;
// memory stays bounded however much is written.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ptprof/status.hpp"

namespace ptprof::exporting {

class OutputFile {
 public:
  // An error ("PATH: reason") when the file cannot be created.
  static Result<std::unique_ptr<OutputFile>> create(const std::string& path);
  virtual ~OutputFile() = default;

  // Buffered; the first I/O error is kept and reported by finish().
  virtual void write(std::string_view bytes) = 0;
  // Flushes, closes and renames into place; an error ("PATH: reason") on any
  // failure, the .tmp file removed then.
  virtual Status finish() = 0;
  // Bytes written so far (compressed bytes for a .gz file, once flushed).
  virtual uint64_t bytes_written() const = 0;
};

// Writes `contents` to `path` through an OutputFile: the whole file under its
// name, or an error and no file.
Status write_file(const std::string& path, std::string_view contents);

}  // namespace ptprof::exporting
