// Fuzz target: a bridge cache entry's bridge.info of arbitrary contents, as
// the agent and `ptprof bridge list` read it before trusting a bridge
// (ptprof/bridge_trust.hpp). Anyone who can write the cache could write it;
// the parser must stay bounded, and no text may make a library that does not
// match it pass the check.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ptprof/bridge_kit.hpp"
#include "ptprof/bridge_trust.hpp"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {  // NOLINT(readability-identifier-naming)
  using namespace ptprof::bridge;
  // "@SOURCES@" stands for this build's kSourceHash, which changes with the
  // bridge's sources: the corpus can then hold entries of this ptprof.
  std::string text(reinterpret_cast<const char*>(data), size);
  for (size_t at; (at = text.find("@SOURCES@")) != std::string::npos;) text.replace(at, 9, kSourceHash);
  const auto info = parse_info(text);
  require(info.size() <= kMaxInfoLines);
  for (const auto& [key, value] : info) require(!key.empty() && key.size() + value.size() + 3 <= kMaxInfoLine);

  // A library this info does not describe (another size, another hash) and
  // a torch it was not built for are never accepted, whatever the text says.
  TorchInstall torch{"/nonexistent/libtorch_cpu.so", "/nonexistent", "9.9.9", 12345};
  const LibraryFacts facts{777, 0x0123456789abcdefull};
  const std::string verdict = info_problem(info, facts, &torch, kSourceHash);
  const std::string any_torch = info_problem(info, facts, nullptr, kSourceHash);
  auto says = [&](const char* key, const std::string& value) {
    auto it = info.find(key);
    return it != info.end() && it->second == value;
  };
  const bool describes = says("library_bytes", "777") && says("library_hash", hash_text(facts.hash)) &&
                         says("bridge_sources", kSourceHash);
  require(any_torch.empty() == describes);
  if (verdict.empty()) require(describes && says("torch_version", "9.9.9") && says("libtorch_cpu_bytes", "12345"));
  return 0;
}
