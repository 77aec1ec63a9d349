// Whether a torch bridge may be loaded into a profiled process: the one gate
// every candidate goes through (the cache's entry, the wheel's prebuilt one,
// PTPROF_TORCH_BRIDGE), before any dlopen. docs/security.md holds the trust
// model this implements:
//  - ownership: the file, its directory and the cache root are the profiling
//    user's (or root's) and writable by no one else; every directory above
//    them is too, or sticky (/tmp): no one else can replace what was checked
//    between the check and the dlopen;
//  - integrity: bridge.info, written when the bridge was published, records
//    the library's size and a hash of its bytes and the torch it was built
//    for; a mismatch is a broken bridge (truncated, corrupted, another
//    torch's). The hash (FNV-1a, 64 bits) detects accidents, not an attacker
//    with the user's own uid, who could rewrite bridge.info as well.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "ptprof/bridge_cache.hpp"

namespace ptprof::bridge {

// Why `path` (a file or directory) must not be trusted by this process, in a
// few words naming the path at fault; empty when it may be. The last
// `strict_levels` components of its real path (itself included) must be
// writable by no one but their owner; the ones above may instead be sticky.
std::string ownership_problem(const std::string& path, int strict_levels);

// What a library file is, for comparison with bridge.info.
struct LibraryFacts {
  uint64_t bytes = 0;
  uint64_t hash = 0;
};
// FNV-1a over the file's bytes; false when it cannot be read.
bool library_facts(const std::string& path, LibraryFacts& out);
std::string hash_text(uint64_t hash);  // 16 hex digits, as bridge.info holds it

// bridge.info's `key = value` lines from `text`: at most kMaxInfoLines lines,
// each at most kMaxInfoLine bytes (longer ones are dropped).
inline constexpr size_t kMaxInfoLines = 64;
inline constexpr size_t kMaxInfoLine = 4096;
std::map<std::string, std::string> parse_info(std::string_view text);

// Why a library with `facts` and bridge.info `info` is not the bridge for
// `torch` (null: any torch) built from the bridge sources hashing to
// `source_hash` (kSourceHash in production); empty if it is.
std::string info_problem(const std::map<std::string, std::string>& info, const LibraryFacts& facts,
                         const TorchInstall* torch, const std::string& source_hash);

struct Verdict {
  enum class Kind { Ok, Missing, Untrusted, Broken } kind = Kind::Missing;
  std::string why;  // Untrusted, Broken: one line naming the path
  bool ok() const { return kind == Kind::Ok; }
};

// The gate for `<root>/<key>/libptprof_torch.so`, cached or prebuilt: the
// ownership of root, entry and file (and bridge.info), then its integrity
// against bridge.info and `torch` (null: for whichever torch it says).
Verdict check_entry(const std::string& root, const std::string& key, const TorchInstall* torch,
                    const std::string& source_hash);

// The gate for a library given by path (PTPROF_TORCH_BRIDGE): ownership of
// the file and its directory only; it has no bridge.info to check against.
Verdict check_explicit(const std::string& library);

}  // namespace ptprof::bridge
