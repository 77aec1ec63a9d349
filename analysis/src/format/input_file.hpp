// A read-only file accessed by offset, so the reader can hop over chunks it
// does not need (event chunks, for `info`) without reading them.
#pragma once
#include <cstdint>
#include <string>

#include "ptprof/status.hpp"

namespace ptprof::format::detail {

class InputFile {
 public:
  InputFile() = default;
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // False with `error` ("PATH: reason") if it cannot be opened or is not a
  // regular file.
  Status open(const std::string& path);
  uint64_t size() const { return size_; }
  // Reads exactly `n` bytes at `offset`; false on a short read or I/O error.
  bool read(uint64_t offset, void* out, size_t n) const;

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace ptprof::format::detail
