// Writes the seeds of corpus/fuzz_trace_reader from real trace files: each
// file as it is, and a copy with every chunk stored uncompressed (checksums
// recomputed), which the fuzzer can mutate meaningfully.
//   build/bin/make_trace_seeds OUT_DIR TRACE.bin...
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "format/zstd_codec.hpp"
#include "trace_chunks.hpp"

namespace {

using namespace ptprof;

bool decompress_chunks(const std::string& in, std::string& out) {
  using namespace format::detail;
  Decompressor zstd;
  out.assign(in, 0, kPreambleBytes);
  std::string copy = in;
  bool ok = true;
  fuzz::for_each_chunk(copy, [&](uint8_t* head, uint8_t* payload, uint32_t stored) {
    std::string raw(reinterpret_cast<const char*>(payload), stored);
    if (fuzz::load_u32(head + 4) & kChunkZstd) {
      std::string plain;
      const Status s = zstd.decompress(raw, fuzz::load_u32(head + 12), plain);
      if (!s.ok()) {
        ok = false;
        return;
      }
      raw = std::move(plain);
    }
    uint8_t h[kChunkHeaderBytes];
    std::memcpy(h, head, sizeof h);
    fuzz::store_u32(h + 4, 0);  // flags: stored as is
    fuzz::store_u32(h + 8, uint32_t(raw.size()));
    fuzz::store_u32(h + 12, uint32_t(raw.size()));
    out.append(reinterpret_cast<const char*>(h), sizeof h);
    out += raw;
  });
  fuzz::repair_checksums(out);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT_DIR TRACE.bin...\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::ifstream f(argv[i], std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const std::string stem = std::filesystem::path(argv[i]).stem().string();
    std::ofstream(dir / (stem + ".bin"), std::ios::binary) << bytes;
    std::string plain;
    if (!decompress_chunks(bytes, plain)) {
      std::fprintf(stderr, "%s: a chunk does not decompress\n", argv[i]);
      return 1;
    }
    std::ofstream(dir / (stem + ".plain.bin"), std::ios::binary) << plain;
    std::printf("%s: %zu bytes, uncompressed %zu\n", stem.c_str(), bytes.size(), plain.size());
  }
  return 0;
}
