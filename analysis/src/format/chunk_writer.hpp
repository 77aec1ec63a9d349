// Frames payloads as chunks (header, checksums, optional zstd) and appends
// them to the output file.
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "format/format_layout.hpp"
#include "format/zstd_codec.hpp"
#include "ptprof/status.hpp"

namespace ptprof::format::detail {

class ChunkWriter {
 public:
  // Writes the file preamble to `fd`, a new file created for `path` (named in
  // errors); takes ownership of fd.
  static Result<std::unique_ptr<ChunkWriter>> open(int fd, const std::string& path);
  ChunkWriter(std::FILE* f, std::string path);  // takes ownership of f; use open()

  // Appends one chunk; an error on an I/O or zstd failure.
  Status write(ChunkType type, std::string_view raw);
  // Hands what is buffered to the file, so that a reader (of a file whose
  // writer is killed later) sees every chunk written so far.
  Status flush();
  // Flushes and closes the file; an error if any write failed.
  Status close();

  uint64_t bytes_written() const { return bytes_; }

 private:
  struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  Status put(const void* data, size_t size);

  std::unique_ptr<std::FILE, FileCloser> file_;
  std::string path_;
  Compressor compressor_{kZstdLevel};
  std::string compressed_;
  uint64_t bytes_ = 0;
};

}  // namespace ptprof::format::detail
