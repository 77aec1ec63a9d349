// The per-user cache of torch bridges: one libptprof_torch.so per torch
// installation, built on demand (`ptprof bridge build`) and found by the agent
// with no help from Python. Agent, launcher and tests all name a bridge
// through these functions, so the key is defined once.
//
// Layout: <root>/<key>/{libptprof_torch.so, bridge.info, build.log}
//   root  PTPROF_BRIDGE_CACHE, else $XDG_CACHE_HOME/ptprof/bridges, else
//         $HOME/.cache/ptprof/bridges
//   key   torch-<version>-<16 hex digits>, the digits a hash of the library's
//         real path and size, the torch version, and the bridge's own sources
//         (so a ptprof whose bridge changed never loads an old build)
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace ptprof::bridge {

inline constexpr const char* kLibraryName = "libptprof_torch.so";
inline constexpr const char* kInfoName = "bridge.info";
inline constexpr const char* kLogName = "build.log";

// A torch installation as the bridge cache sees it.
struct TorchInstall {
  std::string library;  // real path of libtorch_cpu.so
  std::string lib_dir;  // its directory
  std::string version;  // "2.15.0+cu132", "1.13" (may be empty: unknown)
  uint64_t library_bytes = 0;
};

// Describes the torch whose libtorch_cpu.so is at `library` (any name that
// resolves to it). Empty `library` in the result when the file is missing.
TorchInstall describe_torch(const std::string& library);

// Where bridges are cached; `getenv_fn` is getenv in production. Empty when
// neither PTPROF_BRIDGE_CACHE, XDG_CACHE_HOME nor HOME is set. Absolute: a
// relative PTPROF_BRIDGE_CACHE is taken from the current directory, so read
// it at start (the agent does, and `ptprof run` exports it absolute).
using GetEnv = std::function<const char*(const char*)>;
std::string cache_root(const GetEnv& getenv_fn);

// The cache key of `torch` for bridges built from sources hashing to
// `source_hash` (kBridgeSourceHash in production).
std::string cache_key(const TorchInstall& torch, const std::string& source_hash);

// Bridges prebuilt when ptprof was built (the wheel carries them, in
// <prefix>/share/ptprof/bridges/<prebuilt key>/): keyed like the cache but
// without the library's path, which differs in every environment that
// installs the same torch: the torch version, the size of libtorch_cpu.so
// (the same wheel of torch has the same file) and the bridge's sources.
std::string prebuilt_key(const TorchInstall& torch, const std::string& source_hash);
inline constexpr const char* kPrebuiltDir = "share/ptprof/bridges";

// `key = value` lines, as bridge.info holds them.
std::map<std::string, std::string> read_info(const std::string& path);

}  // namespace ptprof::bridge
