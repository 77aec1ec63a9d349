#include "format/zstd_codec.hpp"

#include <zstd.h>

namespace ptprof::format::detail {

struct Compressor::Ctx {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ~Ctx() { ZSTD_freeCCtx(c); }
};

Compressor::Compressor(int level) : ctx_(std::make_unique<Ctx>()), level_(level) {}
Compressor::~Compressor() = default;

bool Compressor::compress(std::string_view in, std::string& out) {
  if (!ctx_->c) return false;
  out.resize(ZSTD_compressBound(in.size()));
  size_t n = ZSTD_compressCCtx(ctx_->c, out.data(), out.size(), in.data(), in.size(), level_);
  if (ZSTD_isError(n)) return false;
  out.resize(n);
  return true;
}

struct Decompressor::Ctx {
  ZSTD_DCtx* d = ZSTD_createDCtx();
  ~Ctx() { ZSTD_freeDCtx(d); }
};

Decompressor::Decompressor() : ctx_(std::make_unique<Ctx>()) {}
Decompressor::~Decompressor() = default;

Status Decompressor::decompress(std::string_view in, size_t raw_size, std::string& out) {
  if (!ctx_->d) {
    return Status::error("cannot create a zstd context");
  }
  // resize() would zero-fill; the bytes are overwritten anyway.
  out.resize(raw_size);
  size_t n = ZSTD_decompressDCtx(ctx_->d, out.data(), out.size(), in.data(), in.size());
  if (ZSTD_isError(n)) {
    return Status::error(std::string("zstd: ") + ZSTD_getErrorName(n));
  }
  if (n != raw_size) {
    return Status::error("decompressed size " + std::to_string(n) + " differs from the chunk's " +
                         std::to_string(raw_size));
  }
  return {};
}

}  // namespace ptprof::format::detail
