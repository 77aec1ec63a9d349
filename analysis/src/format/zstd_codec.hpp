// Reusable zstd contexts: creating one per chunk would cost more than
// compressing a 64K-event chunk at level 1-3.
#pragma once
#include <memory>
#include <string>

#include <string_view>
#include "ptprof/status.hpp"

namespace ptprof::format::detail {

class Compressor {
 public:
  explicit Compressor(int level);
  ~Compressor();
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;
  // Replaces `out` with the compressed frame; false on a zstd error.
  bool compress(std::string_view in, std::string& out);

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
  int level_;
};

class Decompressor {
 public:
  Decompressor();
  ~Decompressor();
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;
  // Decompresses exactly `raw_size` bytes into `out`; false (with `error` set)
  // if the frame is malformed or its size differs.
  Status decompress(std::string_view in, size_t raw_size, std::string& out);

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

}  // namespace ptprof::format::detail
