#include "ptprof/bridge_trust.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace ptprof::bridge {
namespace {

std::string mode_text(mode_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", unsigned(mode & 07777));
  return buf;
}

// One level of a path: whose it is and who else may change it.
std::string level_problem(const std::string& path, const struct stat& st, bool strict) {
  const uid_t me = ::geteuid();
  if (st.st_uid != me && st.st_uid != 0)
    return path + " is owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " + std::to_string(me) +
           ") or root";
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) == 0) return {};
  // Above the levels that hold the bridge, a sticky directory (/tmp) is
  // fine: others may add to it but not rename or remove what is ours.
  if (!strict && S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX)) return {};
  return path + " is writable by " + ((st.st_mode & S_IWOTH) ? "every user" : "its group") + " (mode " +
         mode_text(st.st_mode) + ")";
}

std::string parent_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

const std::string* find(const std::map<std::string, std::string>& info, const char* key) {
  auto it = info.find(key);
  return it == info.end() ? nullptr : &it->second;
}

// Reads a small file of the cache without following a link; at most `limit`
// bytes. False when it cannot be opened.
bool read_small(const std::string& path, size_t limit, std::string& out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  while (out.size() < limit) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, size_t(n));
  }
  ::close(fd);
  if (out.size() > limit) out.resize(limit);
  return true;
}

Verdict verdict(Verdict::Kind kind, std::string why) { return {kind, std::move(why)}; }

}  // namespace

std::string ownership_problem(const std::string& path, int strict_levels) {
  std::unique_ptr<char, decltype(&std::free)> real(::realpath(path.c_str(), nullptr), &std::free);
  if (!real) return path + ": " + std::strerror(errno);
  int level = 0;
  for (std::string p = real.get();; p = parent_of(p), ++level) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return p + ": " + std::strerror(errno);
    if (S_ISLNK(st.st_mode)) return p + " was replaced by a link while it was checked";
    if (auto why = level_problem(p, st, level < strict_levels); !why.empty()) return why;
    if (p == "/") return {};
  }
}

bool library_facts(const std::string& path, LibraryFacts& out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64 offset basis
  uint64_t bytes = 0;
  std::vector<unsigned char> buf(1 << 16);
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      h ^= buf[size_t(i)];
      h *= 1099511628211ull;
    }
    bytes += uint64_t(n);
  }
  ::close(fd);
  out = {bytes, h};
  return true;
}

std::string hash_text(uint64_t hash) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

std::map<std::string, std::string> parse_info(std::string_view text) {
  std::map<std::string, std::string> out;
  size_t lines = 0;
  while (!text.empty() && lines++ < kMaxInfoLines) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.size() > kMaxInfoLine) continue;
    size_t eq = line.find(" = ");
    if (eq != std::string_view::npos && eq > 0) out[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 3));
  }
  return out;
}

std::string info_problem(const std::map<std::string, std::string>& info, const LibraryFacts& facts,
                         const TorchInstall* torch, const std::string& source_hash) {
  const std::string* sources = find(info, "bridge_sources");
  if (!sources || *sources != source_hash) return "built from other bridge sources (by another ptprof)";
  const std::string* bytes = find(info, "library_bytes");
  const std::string* hash = find(info, "library_hash");
  if (!bytes || !hash) return "bridge.info records no size and hash of the library (made by an older ptprof)";
  if (*bytes != std::to_string(facts.bytes))
    return "the library is " + std::to_string(facts.bytes) + " bytes, bridge.info says " + *bytes +
           " (truncated or replaced)";
  if (*hash != hash_text(facts.hash))
    return "the library's bytes are not those bridge.info records (corrupted or replaced)";
  if (!torch) return {};
  const std::string* version = find(info, "torch_version");
  const std::string* torch_bytes = find(info, "libtorch_cpu_bytes");
  const std::string* library = find(info, "libtorch_cpu");
  const std::string* kind = find(info, "kind");
  if (!version || *version != torch->version)
    return "built for torch " + (version ? *version : std::string("(unknown)")) + ", this process has torch " +
           torch->version;
  if (!torch_bytes || *torch_bytes != std::to_string(torch->library_bytes))
    return "built for a libtorch_cpu.so of " + (torch_bytes ? *torch_bytes : std::string("?")) +
           " bytes, this process's has " + std::to_string(torch->library_bytes);
  // A prebuilt bridge serves any torch of its version and size; a cached one
  // the very file it was built against.
  if ((!kind || *kind != "prebuilt") && (!library || *library != torch->library))
    return "built for " + (library ? *library : std::string("(unknown)")) + ", this process has " + torch->library;
  return {};
}

Verdict check_entry(const std::string& root, const std::string& key, const TorchInstall* torch,
                    const std::string& source_hash) {
  const std::string dir = root + "/" + key;
  const std::string library = dir + "/" + kLibraryName;
  const std::string info_path = dir + "/" + kInfoName;
  struct stat st {};
  if (::lstat(library.c_str(), &st) != 0) return {};  // Missing
  // The root first, so that a shared root is named as the fault; then each
  // file with its entry and the root (the levels that must be strictly ours).
  for (const auto& [path, strict] : {std::pair{root, 1}, {library, 3}, {info_path, 3}})
    if (auto why = ownership_problem(path, strict); !why.empty()) return verdict(Verdict::Kind::Untrusted, why);
  if (!S_ISREG(st.st_mode)) return verdict(Verdict::Kind::Untrusted, library + " is not a regular file");
  std::string text;
  if (!read_small(info_path, kMaxInfoLines * 128, text))
    return verdict(Verdict::Kind::Broken, dir + " has no readable " + kInfoName);
  LibraryFacts facts;
  if (!library_facts(library, facts)) return verdict(Verdict::Kind::Broken, library + ": " + std::strerror(errno));
  if (auto why = info_problem(parse_info(text), facts, torch, source_hash); !why.empty())
    return verdict(Verdict::Kind::Broken, dir + ": " + why);
  return verdict(Verdict::Kind::Ok, {});
}

Verdict check_explicit(const std::string& library) {
  struct stat st {};
  if (::stat(library.c_str(), &st) != 0) return verdict(Verdict::Kind::Missing, library + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return verdict(Verdict::Kind::Untrusted, library + " is not a regular file");
  if (auto why = ownership_problem(library, 2); !why.empty()) return verdict(Verdict::Kind::Untrusted, why);
  return verdict(Verdict::Kind::Ok, {});
}

// Here rather than in bridge_cache.cpp: read like every file of the cache,
// bounded and without following a link.
std::map<std::string, std::string> read_info(const std::string& path) {
  std::string text;
  if (!read_small(path, kMaxInfoLines * 128, text)) return {};
  return parse_info(text);
}

}  // namespace ptprof::bridge
