#include "format/chunk_writer.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "format/byte_io.hpp"
#include "format/crc32c.hpp"

namespace ptprof::format::detail {

ChunkWriter::ChunkWriter(std::FILE* f, std::string path) : file_(f), path_(std::move(path)) {}

Result<std::unique_ptr<ChunkWriter>> ChunkWriter::open(int fd, const std::string& path) {
  std::FILE* f = ::fdopen(fd, "wb");
  if (!f) {
    const int err = errno;
    ::close(fd);
    return Status::error(path + ": " + std::strerror(err));
  }
  // Chunks are written whole; a large buffer turns them into few syscalls.
  std::setvbuf(f, nullptr, _IOFBF, 1u << 20);
  auto w = std::make_unique<ChunkWriter>(f, path);
  std::string pre(reinterpret_cast<const char*>(kMagic), sizeof kMagic);
  put_u32(pre, kFormatVersion);
  put_u32(pre, 0);
  if (Status s = w->put(pre.data(), pre.size()); !s.ok()) return s;
  return w;
}

Status ChunkWriter::put(const void* data, size_t size) {
  if (std::fwrite(data, 1, size, file_.get()) != size) {
    return Status::error(path_ + ": write failed: " + std::strerror(errno));
  }
  bytes_ += size;
  return {};
}

Status ChunkWriter::write(ChunkType type, std::string_view raw) {
  if (raw.size() > kMaxChunkRawBytes) {
    return Status::error(path_ + ": internal error: chunk of " + std::to_string(raw.size()) + " bytes");
  }
  std::string_view stored = raw;
  uint32_t flags = 0;
  // Tiny payloads gain nothing from a frame; header and footer stay plain so
  // a tool can read them without zstd.
  bool compressible = type != ChunkType::Header && type != ChunkType::Footer;
  if (compressible && raw.size() >= 64) {
    if (!compressor_.compress(raw, compressed_)) {
      return Status::error(path_ + ": zstd compression failed");
    }
    if (compressed_.size() < raw.size()) {
      stored = compressed_;
      flags |= kChunkZstd;
    }
  }
  std::string head;
  head.reserve(kChunkHeaderBytes);
  put_u32(head, uint32_t(type));
  put_u32(head, flags);
  put_u32(head, uint32_t(stored.size()));
  put_u32(head, uint32_t(raw.size()));
  put_u32(head, crc32c(stored.data(), stored.size()));
  put_u32(head, crc32c(head.data(), head.size()));
  if (Status s = put(head.data(), head.size()); !s.ok()) return s;
  return put(stored.data(), stored.size());
}

Status ChunkWriter::flush() {
  if (!file_) return {};
  if (std::fflush(file_.get()) != 0) return Status::error(path_ + ": write failed: " + std::strerror(errno));
  return {};
}

Status ChunkWriter::close() {
  std::FILE* f = file_.release();
  if (!f) return {};
  bool ok = std::fflush(f) == 0 && !std::ferror(f);
  int saved = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  if (!ok) return Status::error(path_ + ": write failed: " + std::strerror(saved));
  return {};
}

}  // namespace ptprof::format::detail
