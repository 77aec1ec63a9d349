// The agent's question to the driver for each GPU's properties
// (cupti/cuda_devices.hpp), asked of a driver made of test functions: the
// JSON under Kineto's keys, a driver not yet initialised, one that fails.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "cupti/cuda_devices.hpp"

using namespace ptprof::agent::cupti;

namespace {

// A driver of two A100s; `g_answer` is what every question returns, and a
// failing attribute may be named.
CUresult g_answer = CUDA_SUCCESS;
int g_failing_attribute = -1;

CUresult test_count(int* n) {
  if (g_answer != CUDA_SUCCESS) return g_answer;
  *n = 2;
  return CUDA_SUCCESS;
}
CUresult test_name(char* name, int length, CUdevice device) {
  std::snprintf(name, size_t(length), device == 0 ? "NVIDIA A100-SXM4-80GB" : "a \"quoted\" GPU");
  return CUDA_SUCCESS;
}
CUresult test_total(size_t* bytes, CUdevice) {
  *bytes = 84990623744ull;
  return CUDA_SUCCESS;
}
CUresult test_attribute(int* v, CUdevice_attribute a, CUdevice) {
  if (int(a) == g_failing_attribute) return CUDA_ERROR_INVALID_VALUE;
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *v = 8;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *v = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *v = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      *v = 2048;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
      *v = 65536;
      break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      *v = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      *v = 49152;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
      *v = 167936;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *v = 108;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *v = 166912;
      break;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK:
      *v = 1024;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

DeviceQueries test_driver() {
  g_answer = CUDA_SUCCESS;
  g_failing_attribute = -1;
  DeviceQueries q;
  q.get_count = test_count;
  q.get_name = test_name;
  q.total_mem = test_total;
  q.get_attribute = test_attribute;
  return q;
}

}  // namespace

TEST_CASE("CUDA devices: each GPU as Kineto's deviceProperties entry", "[agent][cupti][devices]") {
  const DeviceQueries q = test_driver();
  std::vector<std::string> out;
  REQUIRE(describe_devices(q, out) == DevicesAnswer::Described);
  REQUIRE(out.size() == 2);
  CHECK(out[0] ==
        R"({"id":0,"name":"NVIDIA A100-SXM4-80GB","totalGlobalMem":84990623744,"computeMajor":8,"computeMinor":0,)"
        R"("maxThreadsPerBlock":1024,"maxThreadsPerMultiprocessor":2048,"regsPerBlock":65536,)"
        R"("regsPerMultiprocessor":65536,"warpSize":32,"sharedMemPerBlock":49152,"sharedMemPerMultiprocessor":167936,)"
        R"("numSms":108,"sharedMemPerBlockOptin":166912,"reservedSharedMemPerBlock":1024})");
  CHECK(out[1].starts_with(R"({"id":1,"name":"a \"quoted\" GPU",)"));
}

TEST_CASE("CUDA devices: a driver that cannot say yet, or at all", "[agent][cupti][devices]") {
  DeviceQueries q = test_driver();
  std::vector<std::string> out{"stale"};
  g_answer = CUDA_ERROR_NOT_INITIALIZED;  // no cuInit yet
  CHECK(describe_devices(q, out) == DevicesAnswer::NotInitialized);
  CHECK(out.empty());
  g_answer = CUDA_ERROR_NO_DEVICE;
  CHECK(describe_devices(q, out) == DevicesAnswer::Failed);
  g_answer = CUDA_SUCCESS;
  g_failing_attribute = CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
  CHECK(describe_devices(q, out) == DevicesAnswer::Failed);
  CHECK(out.empty());
  // A driver too old to know the reserved shared memory: left out, the rest said.
  g_failing_attribute = CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK;
  REQUIRE(describe_devices(q, out) == DevicesAnswer::Described);
  REQUIRE(out.size() == 2);
  CHECK(out[0].ends_with(R"("sharedMemPerBlockOptin":166912})"));
}
