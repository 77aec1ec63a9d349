// Fuzz target: the trigger protocol's fields of a session (shm_abi.hpp,
// SessionHeader::trigger_*), as any process of the job may have written them.
// Input: 56 bytes laid over the session's trigger fields (offsets 104 to
// 160), the reading agent's pid (4 bytes) and clock (8 bytes), then bytes
// laid over trigger_paths (what the trigger prints), which are also split at
// NUL bytes into a list of paths for the launcher to publish.
// Whatever the session holds, an agent reads a request it can act on (a
// deadline never before now, only known options, the window the request's
// number says), the trigger reads whole paths within the buffer, and a list
// the launcher publishes reads back as published, less the paths that did
// not fit, which it counts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ptprof/trigger_request.hpp"

namespace {

using namespace ptprof;

constexpr size_t kFieldsOffset = offsetof(wire::SessionHeader, trigger_seq);
constexpr size_t kFieldsBytes = offsetof(wire::SessionHeader, slots) - kFieldsOffset;
static_assert(kFieldsBytes == 56);

void require(bool ok) {
  if (!ok) std::abort();
}

template <class T>
T take(const uint8_t*& data, size_t& size) {
  T v{};
  const size_t n = std::min(size, sizeof v);
  std::memcpy(&v, data, n);
  data += n;
  size -= n;
  return v;
}

void check_request(const wire::SessionHeader& s, int32_t pid, uint64_t now_ns) {
  const uint32_t seq = s.trigger_seq.load(std::memory_order_relaxed);
  const wire::TriggerRequest r = wire::read_trigger_request(s, seq, pid, now_ns);
  require(r.applies == (s.trigger_pid == 0 || s.trigger_pid == pid));
  require(r.window == seq - 1);
  require(r.deadline_ns >= now_ns);
  require((r.options & ~wire::kWindowOptionsMask) == 0);
}

// What the trigger prints from a buffer it did not write.
void check_reply(const wire::SessionHeader& s) {
  size_t bytes = 0;
  for (const std::string& p : wire::read_trigger_paths(s)) {
    require(!p.empty() && p.find('\n') == std::string::npos && p.find('\0') == std::string::npos);
    bytes += p.size() + 1;
  }
  require(bytes <= sizeof s.trigger_paths);
}

// The launcher's reply, read back.
void check_round_trip(wire::SessionHeader& s, std::string_view list) {
  std::vector<std::string_view> paths;
  for (size_t at = 0; at <= list.size();) {
    const size_t end = std::min(list.find('\0', at), list.size());
    paths.push_back(list.substr(at, end - at));
    at = end + 1;
  }
  wire::write_trigger_paths(s, paths);
  const std::vector<std::string> read = wire::read_trigger_paths(s);
  size_t next = 0;
  uint32_t written = 0;
  size_t used = 0;
  for (std::string_view p : paths) {
    if (used + p.size() + 1 >= sizeof s.trigger_paths || p.find('\n') != std::string_view::npos) continue;
    used += p.size() + 1;
    ++written;
    if (p.empty()) continue;  // an empty line is no path
    require(next < read.size() && read[next] == p);
    ++next;
  }
  require(next == read.size());
  require(s.trigger_paths_left == paths.size() - written);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {  // NOLINT(readability-identifier-naming)
  auto session = std::make_unique<wire::SessionHeader>();
  wire::SessionHeader& s = *session;
  const size_t fields = std::min(size, kFieldsBytes);
  std::memcpy(reinterpret_cast<uint8_t*>(&s) + kFieldsOffset, data, fields);
  data += fields;
  size -= fields;
  const auto pid = take<int32_t>(data, size);
  const auto now_ns = take<uint64_t>(data, size);
  std::memcpy(s.trigger_paths, data, std::min(size, sizeof s.trigger_paths));
  check_request(s, pid, now_ns);
  check_reply(s);
  check_round_trip(s, std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
