// An export's output file: written under `path + ".tmp"` and renamed by
// finish(), so a file under its final name is complete; gzip-compressed when
// the name ends in ".gz". Writes are buffered; memory stays bounded however
// much is written.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace ptprof::exporting::detail {

class OutputFile {
 public:
  // nullptr with `error` ("PATH: reason") when the file cannot be created.
  static std::unique_ptr<OutputFile> create(const std::string& path, std::string* error);
  virtual ~OutputFile() = default;

  // Buffered; the first I/O error is kept and reported by finish().
  virtual void write(std::string_view bytes) = 0;
  // Flushes, closes and renames into place; false with `error` on any failure
  // (the .tmp file is removed then).
  virtual bool finish(std::string* error) = 0;
  // Bytes written so far (compressed bytes for a .gz file, once flushed).
  virtual uint64_t bytes_written() const = 0;
};

bool ends_with(std::string_view s, std::string_view suffix);

}  // namespace ptprof::exporting::detail
