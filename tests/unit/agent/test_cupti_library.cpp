// Where the agent looks for CUPTI (agent/src/cupti/cupti_library.cpp), and opening
// one: the stand-in libcupti of the tests resolves every entry point, a
// library that is not CUPTI is refused with the reason.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "cupti/cupti_library.hpp"

using ptprof::agent::cupti::cupti_candidates;

namespace {

size_t index_of(const std::vector<std::string>& v, const std::string& s) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] == s) return i;
  return v.size();
}

}  // namespace

TEST_CASE("cupti library: candidates, best first", "[cupti]") {
  const std::string site = "/venv/lib/python3.11/site-packages/nvidia";
  const std::vector<std::string> loaded = {"/usr/lib/libc.so.6", site + "/cuda_runtime/lib/libcudart.so.12",
                                           "/opt/other/libcupti.so.12"};
  const std::vector<std::string> c = cupti_candidates(nullptr, loaded);
  REQUIRE(!c.empty());
  CHECK(c[0] == "/opt/other/libcupti.so.12");  // the copy the process already uses
  const size_t beside = index_of(c, site + "/cuda_runtime/lib/libcupti.so.12");
  const size_t pip12 = index_of(c, site + "/cuda_cupti/lib/libcupti.so.12");
  const size_t pip13 = index_of(c, site + "/cu13/lib/libcupti.so.13");
  const size_t toolkit = index_of(c, "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so");
  CHECK(beside < pip12);
  CHECK(pip12 < c.size());
  CHECK(pip13 < c.size());
  CHECK(pip12 < toolkit);
  CHECK(toolkit < c.size());
  CHECK(index_of(c, "/usr/local/cuda/lib64/libcupti.so.13") < c.size());
  // Each path once.
  for (size_t i = 0; i < c.size(); ++i) CHECK(index_of(c, c[i]) == i);
}

TEST_CASE("cupti library: PTPROF_CUPTI_PATH is the only candidate", "[cupti]") {
  const std::vector<std::string> loaded = {"/opt/other/libcupti.so.12"};
  CHECK(cupti_candidates("/x/libcupti.so.13", loaded) == std::vector<std::string>{"/x/libcupti.so.13"});
  const std::vector<std::string> dir = cupti_candidates("/tmp", loaded);  // a directory: its libcupti files
  REQUIRE(!dir.empty());
  CHECK(dir[0] == "/tmp/libcupti.so");
  for (const auto& p : dir) CHECK(p.rfind("/tmp/libcupti.so", 0) == 0);
}

TEST_CASE("cupti library: opening resolves every entry point, or says why not", "[cupti]") {
  const std::string fake = std::string(PTPROF_TEST_PROGRAMS_DIR) + "/../fake-cupti/libcupti.so";
  const auto lib = ptprof::agent::cupti::open_cupti({"/nonexistent/libcupti.so", fake});
  REQUIRE(lib);
  CHECK(lib->path == fake);
  CHECK(lib->api.subscribe != nullptr);
  CHECK(lib->api.flush_all != nullptr);
  CHECK(lib->api.push_external != nullptr);
  CHECK(lib->api.result_string != nullptr);
  CHECK(ptprof::agent::cupti::result_text(lib->api, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) ==
        "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");

  const auto none = ptprof::agent::cupti::open_cupti({"/nonexistent/libcupti.so"});
  CHECK_FALSE(none);
  CHECK(none.error().empty());  // nothing there: the caller says where it looked
  void* libm = dlopen("libm.so.6", RTLD_NOW);
  Dl_info info{};
  REQUIRE(libm);
  REQUIRE(dladdr(dlsym(libm, "cos"), &info));
  const auto not_cupti = ptprof::agent::cupti::open_cupti({info.dli_fname});
  CHECK_FALSE(not_cupti);
  CHECK(not_cupti.error() == std::string(info.dli_fname) + " lacks a CUPTI entry point");
}
