#include "ptprof/bridge_cache.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "ptprof/config.hpp"
#include "ptprof/torch_version.hpp"

namespace ptprof::bridge {
namespace {

// FNV-1a: stable across builds and machines, which std::hash is not.
uint64_t fnv1a(const std::string& text, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Versions become part of a directory name: keep [A-Za-z0-9.+_-] only.
std::string safe_version(const std::string& v) {
  std::string out;
  for (char c : v) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '+' ||
              c == '_' || c == '-';
    out += ok ? c : '_';
  }
  return out.empty() ? "unknown" : out.substr(0, 40);
}

}  // namespace

TorchInstall describe_torch(const std::string& library) {
  TorchInstall t;
  std::unique_ptr<char, decltype(&std::free)> real(realpath(library.c_str(), nullptr), &std::free);
  struct stat st {};
  if (!real || ::stat(real.get(), &st) != 0 || !S_ISREG(st.st_mode)) return t;
  t.library = real.get();
  auto slash = t.library.rfind('/');
  t.lib_dir = slash == 0 ? "/" : t.library.substr(0, slash);
  t.library_bytes = uint64_t(st.st_size);
  // From the real path, whatever name the caller had: keys must not depend on
  // which symlink a process happened to load (libtorch_cpu.so.1.13 vs .1.13.0).
  t.version = torch_bridge::torch_of_library(t.library).version;
  return t;
}

std::string cache_root(const GetEnv& getenv_fn) {
  auto set = [&](const char* name) -> std::string {
    const char* v = getenv_fn(name);
    return v && *v ? std::string(v) : std::string();
  };
  if (auto p = set(env::kBridgeCache); !p.empty()) {
    // Relative to where it is read: callers read it once, at start, before
    // the program can change directory (defect: the target's chdir moved it).
    if (p[0] == '/') return p;
    std::unique_ptr<char, decltype(&std::free)> cwd(::getcwd(nullptr, 0), &std::free);
    return cwd ? std::string(cwd.get()) + "/" + p : p;
  }
  if (auto p = set("XDG_CACHE_HOME"); !p.empty() && p[0] == '/') return p + "/ptprof/bridges";
  if (auto p = set("HOME"); !p.empty()) return p + "/.cache/ptprof/bridges";
  return {};
}

namespace {

std::string key_of(const TorchInstall& torch, const std::string& source_hash, uint64_t h) {
  h = fnv1a("|" + std::to_string(torch.library_bytes) + "|" + torch.version + "|" + source_hash, h);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return "torch-" + safe_version(torch.version) + "-" + hex;
}

}  // namespace

std::string cache_key(const TorchInstall& torch, const std::string& source_hash) {
  return key_of(torch, source_hash, fnv1a(torch.library));
}

std::string prebuilt_key(const TorchInstall& torch, const std::string& source_hash) {
  return key_of(torch, source_hash, fnv1a("prebuilt"));
}

}  // namespace ptprof::bridge
