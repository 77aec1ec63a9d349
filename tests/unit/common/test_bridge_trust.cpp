// The gate before a torch bridge is loaded (ptprof/bridge_trust.hpp): who
// owns each level, and whether the library is the one bridge.info describes.
// The integration side, with a real second uid, is test_bridge_trust.py.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>

#include "launcher_fixtures.hpp"
#include "ptprof/bridge_kit.hpp"
#include "ptprof/bridge_trust.hpp"

using namespace ptprof::bridge;
using ptprof::testing::TempDir;

namespace {

std::string info_for(const LibraryFacts& lib, const std::string& version = "2.1.0", uint64_t torch_bytes = 99) {
  return "torch_version = " + version +
         "\nlibtorch_cpu = /t/libtorch_cpu.so\nlibtorch_cpu_bytes = " + std::to_string(torch_bytes) +
         "\nbridge_sources = " + kSourceHash + "\nkind = cached\nlibrary_bytes = " + std::to_string(lib.bytes) +
         "\nlibrary_hash = " + hash_text(lib.hash) + "\n";
}

}  // namespace

TEST_CASE("bridge.info is parsed within bounds", "[bridge][trust]") {
  auto info = parse_info("a = 1\nb = two words\nnot a pair\n = empty key\nc = \n");
  CHECK(info.size() == 3);
  CHECK(info["b"] == "two words");
  CHECK(info["c"].empty());
  std::string many;
  for (int i = 0; i < 500; ++i) many += "k" + std::to_string(i) + " = v\n";
  CHECK(parse_info(many).size() == kMaxInfoLines);
  CHECK(parse_info("k = " + std::string(kMaxInfoLine, 'x') + "\n").empty());
}

TEST_CASE("a library is accepted only as bridge.info describes it", "[bridge][trust]") {
  const LibraryFacts lib{1000, 0xfeedull};
  TorchInstall torch{"/t/libtorch_cpu.so", "/t", "2.1.0", 99};
  CHECK(info_problem(parse_info(info_for(lib)), lib, &torch, kSourceHash).empty());
  CHECK_THAT(info_problem(parse_info(info_for(lib)), LibraryFacts{500, lib.hash}, &torch, kSourceHash),
             Catch::Contains("the library is 500 bytes, bridge.info says 1000"));
  CHECK_THAT(info_problem(parse_info(info_for(lib)), LibraryFacts{1000, 1}, &torch, kSourceHash),
             Catch::Contains("corrupted or replaced"));
  CHECK_THAT(info_problem(parse_info(info_for(lib, "1.13.0")), lib, &torch, kSourceHash),
             Catch::Contains("built for torch 1.13.0, this process has torch 2.1.0"));
  CHECK_THAT(info_problem(parse_info(info_for(lib, "2.1.0", 98)), lib, &torch, kSourceHash),
             Catch::Contains("libtorch_cpu.so of 98 bytes"));
  TorchInstall elsewhere = torch;
  elsewhere.library = "/u/libtorch_cpu.so";
  CHECK_THAT(info_problem(parse_info(info_for(lib)), lib, &elsewhere, kSourceHash),
             Catch::Contains("built for /t/libtorch_cpu.so"));
  CHECK(info_problem(parse_info(info_for(lib)), lib, nullptr, kSourceHash).empty());
  CHECK_THAT(info_problem(parse_info("torch_version = 2.1.0\n"), lib, &torch, kSourceHash),
             Catch::Contains("other bridge sources"));
  CHECK_THAT(info_problem(parse_info(std::string("bridge_sources = ") + kSourceHash + "\n"), lib, &torch, kSourceHash),
             Catch::Contains("records no size and hash"));
}

TEST_CASE("only what this user or root owns, and no one else can write, is trusted", "[bridge][trust]") {
  TempDir tmp;
  const std::string dir = tmp.path.string() + "/cache";
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  const std::string file = dir + "/lib.so";
  std::ofstream(file) << "x";
  ::chmod(file.c_str(), 0644);
  CHECK(ownership_problem(file, 2).empty());
  ::chmod(file.c_str(), 0664);
  CHECK_THAT(ownership_problem(file, 2), Catch::Contains(file + " is writable by its group (mode 0664)"));
  ::chmod(file.c_str(), 0644);
  ::chmod(dir.c_str(), 01777);  // sticky is fine above the strict levels only
  CHECK_THAT(ownership_problem(file, 2), Catch::Contains(dir + " is writable by every user"));
  CHECK(ownership_problem(file, 1).empty());
  ::chmod(dir.c_str(), 0700);
  if (::geteuid() == 0) {  // a real second uid needs root
    REQUIRE(::chown(file.c_str(), 12345, 12345) == 0);
    CHECK_THAT(ownership_problem(file, 2), Catch::Contains(file + " is owned by uid 12345"));
  }
  CHECK_THAT(ownership_problem(dir + "/missing", 2), Catch::Contains("No such file"));
}

TEST_CASE("library facts are its size and a hash of its bytes", "[bridge][trust]") {
  TempDir tmp;
  const std::string file = tmp.path.string() + "/lib.so";
  std::ofstream(file) << "abc";
  LibraryFacts facts;
  REQUIRE(library_facts(file, facts));
  CHECK(facts.bytes == 3);
  CHECK(hash_text(facts.hash) == "e71fa2190541574b");  // FNV-1a 64 of "abc"
  const std::string link = tmp.path.string() + "/link.so";
  REQUIRE(::symlink(file.c_str(), link.c_str()) == 0);
  CHECK_FALSE(library_facts(link, facts));  // never through a link
}
