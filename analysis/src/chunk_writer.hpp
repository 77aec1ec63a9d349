// Frames payloads as chunks (header, checksums, optional zstd) and appends
// them to the output file.
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "format_layout.hpp"
#include "zstd_codec.hpp"

namespace ptprof::format::detail {

class ChunkWriter {
 public:
  // Opens `path` for writing (truncating) and writes the file preamble.
  static std::unique_ptr<ChunkWriter> open(const std::string& path, std::string* error);
  ChunkWriter(std::FILE* f, std::string path);  // takes ownership of f; use open()

  // Appends one chunk; false (and `error` set) on an I/O or zstd failure.
  bool write(ChunkType type, std::string_view raw, std::string* error);
  // Flushes and closes the file; false if any write failed.
  bool close(std::string* error);

  uint64_t bytes_written() const { return bytes_; }

 private:
  struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  bool put(const void* data, size_t size, std::string* error);

  std::unique_ptr<std::FILE, FileCloser> file_;
  std::string path_;
  Compressor compressor_{kZstdLevel};
  std::string compressed_;
  uint64_t bytes_ = 0;
};

}  // namespace ptprof::format::detail
