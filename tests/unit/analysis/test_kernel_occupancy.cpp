// Kineto's occupancy args as the export computes them (kernel_occupancy.hpp):
// held to the values torch.profiler recorded on real A100s and V100s
// (tests/data/gpu-traces, every distinct launch of them through
// tests/data/gpu-occupancy/cases.tsv), where the toolkit's calculator
// (cuda_occupancy.h) is built in. Also the deviceProperties entry's reader
// (device_properties.hpp).
#include <catch2/catch.hpp>
#include <climits>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "export/device_properties.hpp"
#include "export/kernel_occupancy.hpp"

// The calculator is the toolkit's: where this build has its header, the
// export has the estimate.
#if __has_include(<cuda_occupancy.h>)
#define PTPROF_TEST_HAVE_CUDA_OCCUPANCY 1
#else
#define PTPROF_TEST_HAVE_CUDA_OCCUPANCY 0
#endif

using namespace ptprof::exporting::detail;

namespace {

// The two devices of the recorded traces, as their headers give them.
constexpr const char* kA100 =
    R"({"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 84990623744, "computeMajor": 8, "computeMinor": 0, )"
    R"("maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, )"
    R"("regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 167936, )"
    R"("numSms": 108, "sharedMemPerBlockOptin": 166912})";
constexpr const char* kV100 =
    R"({"id": 0, "name": "Tesla V100-DGXS-32GB", "totalGlobalMem": 34084028416, "computeMajor": 7, "computeMinor": 0, )"
    R"("maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, )"
    R"("regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 98304, )"
    R"("numSms": 80, "sharedMemPerBlockOptin": 98304})";

OccupancyDevice device(const char* json) {
  const std::optional<DeviceProperties> p = read_device_properties(json);
  REQUIRE(p);
  REQUIRE(p->limits);
  return *p->limits;
}

KernelLaunch launch(uint32_t gx, uint32_t bx, uint32_t regs, uint64_t smem, uint32_t gy = 1, uint32_t by = 1) {
  KernelLaunch k;
  k.grid[0] = gx, k.grid[1] = gy, k.grid[2] = 1;
  k.block[0] = bx, k.block[1] = by, k.block[2] = 1;
  k.registers = regs;
  k.shared_memory = smem;
  return k;
}

std::string text(float v) {
  std::string s;
  append_float(s, v);
  return s;
}

// A recorded float arg matches: the same text (Kineto's shortest float), or,
// where the trace wrote it with fixed decimals (std::to_string's six, or the
// 2021 schema's "5.0"), the same at that precision.
bool same_float(const std::string& recorded, float mine) {
  if (recorded == text(mine)) return true;
  const size_t dot = recorded.find('.');
  if (dot == std::string::npos) return false;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", int(recorded.size() - dot - 1), double(mine));
  return recorded == buf;
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, sep)) out.push_back(field);
  return out;
}

}  // namespace

TEST_CASE("Kernel occupancy: the estimate is there exactly where the toolkit's calculator is", "[export][occupancy]") {
  CHECK(has_occupancy_calculator() == bool(PTPROF_TEST_HAVE_CUDA_OCCUPANCY));
}

#if PTPROF_TEST_HAVE_CUDA_OCCUPANCY
TEST_CASE("Kernel occupancy: kernels of the recorded traces, Kineto's values", "[export][occupancy]") {
  const OccupancyDevice a100 = device(kA100), v100 = device(kV100);
  CHECK(a100.reserved_shared_mem_per_block == 1024);  // not in Kineto's header: the drivers' value from sm_80 on
  CHECK(v100.reserved_shared_mem_per_block == 0);
  struct Case {
    const char* trace;
    const OccupancyDevice* d;
    KernelLaunch k;
    const char* blocks;
    const char* warps;
    int percent;
  };
  // Each as its trace records it (grid, block, registers per thread, shared memory).
  const Case cases[] = {
      {"a100_alexnet_cuda_sync", &a100, launch(864, 256, 47, 0), "8", "64", 63},
      {"a100_alexnet_cuda_sync", &a100, launch(12, 256, 16, 0), "0.11111111", "0.8888889", 1},
      {"a100_80gb_training_rank0", &a100, launch(1, 128, 48, 0), "0.009259259", "0.037037037", 0},
      {"two_ranks_rank0 (an A100)", &a100, launch(2400, 256, 27, 0), "22.222221", "177.77777", 100},
      {"two_ranks_rank0 (an A100)", &a100, launch(320, 128, 48, 7696), "2.9629629", "11.851851", 19},
      {"a100_nccl_rank0", &a100, launch(512, 512, 40, 400), "4.740741", "75.851852", 75},
      {"v100_resnet50_kineto2021", &v100, launch(50, 256, 38, 0), "0.625", "5.0", 8},
      {"v100_resnet50_kineto2021", &v100, launch(3136, 128, 128, 16384), "39.2", "156.8", 25},
  };
  for (const Case& c : cases) {
    INFO(c.trace << ": grid " << c.k.grid[0] << " block " << c.k.block[0] << " regs " << c.k.registers << " smem "
                 << c.k.shared_memory);
    const KernelOccupancy o = kernel_occupancy(*c.d, c.k);
    CHECK(same_float(c.blocks, o.blocks_per_sm));
    CHECK(same_float(c.warps, o.warps_per_sm));
    REQUIRE(o.achieved_percent);
    CHECK(*o.achieved_percent == c.percent);
  }
  // Kineto's shortest-float text, as the newer traces have it.
  CHECK(text(kernel_occupancy(a100, launch(864, 256, 47, 0)).blocks_per_sm) == "8");
  CHECK(text(kernel_occupancy(a100, launch(2400, 256, 27, 0)).warps_per_sm) == "177.77777");
}
#endif

#if PTPROF_TEST_HAVE_CUDA_OCCUPANCY
TEST_CASE("Kernel occupancy: every distinct launch of the recorded traces", "[export][occupancy]") {
  std::ifstream in(std::string(PTPROF_SOURCE_DIR) + "/tests/data/gpu-occupancy/cases.tsv");
  REQUIRE(in);
  std::map<std::string, OccupancyDevice> devices;
  std::map<std::string, uint64_t> trace_kernels;
  uint64_t kernels = 0, launches = 0, matched = 0, same_text = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> f = split(line, '\t');
    if (f[0] == "device") {
      REQUIRE(f.size() == 3);
      devices[f[1]] = device(f[2].c_str());
      continue;
    }
    if (f[0] == "trace") {
      REQUIRE(f.size() == 3);
      trace_kernels[f[1]] = std::stoull(f[2]);
      continue;
    }
    REQUIRE(f[0] == "kernel");
    REQUIRE(f.size() == 10);
    REQUIRE(devices.count(f[1]));
    KernelLaunch k;
    const std::vector<std::string> grid = split(f[2], ','), block = split(f[3], ',');
    REQUIRE((grid.size() == 3 && block.size() == 3));
    for (int i = 0; i < 3; ++i) {
      k.grid[i] = uint32_t(std::stoul(grid[size_t(i)]));
      k.block[i] = uint32_t(std::stoul(block[size_t(i)]));
    }
    k.registers = uint32_t(std::stoul(f[4]));
    k.shared_memory = std::stoull(f[5]);
    const KernelOccupancy o = kernel_occupancy(devices[f[1]], k);
    const uint64_t count = std::stoull(f[9]);
    const bool ok = same_float(f[6], o.blocks_per_sm) && same_float(f[7], o.warps_per_sm) && o.achieved_percent &&
                    *o.achieved_percent == std::stoi(f[8]);
    INFO(line << " -> " << text(o.blocks_per_sm) << " " << text(o.warps_per_sm) << " "
              << (o.achieved_percent ? std::to_string(*o.achieved_percent) : "none"));
    CHECK(ok);
    ++launches;
    kernels += count;
    matched += ok ? count : 0;
    same_text += ok && f[6] == text(o.blocks_per_sm) && f[7] == text(o.warps_per_sm) ? count : 0;
  }
  uint64_t recorded = 0;
  for (const auto& [trace, n] : trace_kernels) recorded += n;
  CHECK(trace_kernels.size() == 8);
  CHECK(kernels == recorded);  // every kernel of the traces is a case
  CHECK(launches >= 1000);
  CHECK(matched == kernels);
  // Most of the traces write Kineto's shortest float; the NCCL and Triton
  // ones six decimals, the 2021 one "5.0".
  CHECK(same_text * 2 > kernels);
  WARN("occupancy: " << matched << " of " << kernels << " recorded kernels (" << launches
                     << " distinct launches) match; the float args' text itself in " << same_text);
}
#endif

#if PTPROF_TEST_HAVE_CUDA_OCCUPANCY
TEST_CASE("Kernel occupancy: the calculator's limits", "[export][occupancy]") {
  const OccupancyDevice a100 = device(kA100);
  // Warps: 2048 threads an SM; blocks: 32 an SM on sm_80.
  CHECK(max_active_blocks_per_sm(a100, 1024, 16, 0) == 2);
  CHECK(max_active_blocks_per_sm(a100, 32, 16, 0) == 32);
  // Registers: 255 a thread at most on sm_80 (256 allowed), 64 K an SM.
  CHECK(max_active_blocks_per_sm(a100, 256, 128, 0) == 2);
  CHECK(max_active_blocks_per_sm(a100, 256, 257, 0) == 0);
  // Shared memory: 1 KiB reserved a block, beyond the 48 KiB default limit none fits.
  CHECK(max_active_blocks_per_sm(a100, 128, 16, 48 * 1024) == 3);
  CHECK(max_active_blocks_per_sm(a100, 128, 16, 48 * 1024 + 1) == 0);
  // A block larger than the device allows, a block of nothing.
  CHECK(max_active_blocks_per_sm(a100, 2048, 16, 0) == 0);
  CHECK_FALSE(max_active_blocks_per_sm(a100, 0, 16, 0));
  OccupancyDevice unknown = a100;
  unknown.compute_major = 4;  // no such architecture: the calculator's error
  CHECK_FALSE(max_active_blocks_per_sm(unknown, 128, 16, 0));
  // No estimate, but blocks and warps per SM still (Kineto writes -100 then).
  const KernelOccupancy o = kernel_occupancy(unknown, launch(216, 128, 16, 0));
  CHECK(o.blocks_per_sm == 2.0f);
  CHECK(o.warps_per_sm == 8.0f);
  CHECK_FALSE(o.achieved_percent);
}
#endif

TEST_CASE("Device properties: a deviceProperties entry, checked and written again", "[export][occupancy]") {
  const std::optional<DeviceProperties> p = read_device_properties(kV100);
  REQUIRE(p);
  CHECK(p->json.starts_with(R"({"id":0,"name":"Tesla V100-DGXS-32GB","totalGlobalMem":34084028416,)"));
  CHECK(p->json.ends_with(R"("numSms":80,"sharedMemPerBlockOptin":98304})"));
  REQUIRE(p->limits);
  CHECK(p->limits->num_sms == 80);
  CHECK(p->limits->shared_mem_per_sm == 98304);

  // Given, the driver's reserved shared memory is taken as given.
  const auto reserved = read_device_properties(
      R"({"id":1,"name":"x","computeMajor":9,"computeMinor":0,"maxThreadsPerBlock":1024,"maxThreadsPerMultiprocessor":2048,)"
      R"("regsPerBlock":65536,"regsPerMultiprocessor":65536,"warpSize":32,"sharedMemPerBlock":49152,)"
      R"("sharedMemPerMultiprocessor":233472,"numSms":132,"reservedSharedMemPerBlock":2048})");
  REQUIRE(reserved);
  REQUIRE(reserved->limits);
  CHECK(reserved->limits->reserved_shared_mem_per_block == 2048);

  // Names are escaped again; what is not a flat JSON object is refused.
  const auto named = read_device_properties(R"({"id":0,"name":"a \"b\" \u0001\u00e9"})");
  REQUIRE(named);
  CHECK(named->json == "{\"id\":0,\"name\":\"a \\\"b\\\" \\u0001\xC3\xA9\"}");
  CHECK_FALSE(named->limits);  // nothing to compute with
  CHECK_FALSE(read_device_properties(R"({"id":0,"name":"x"}, "extra")"));
  CHECK_FALSE(read_device_properties(R"({"id":0,"name":"x")"));
  CHECK_FALSE(read_device_properties(R"({"id":[0]})"));
  CHECK_FALSE(read_device_properties(R"({"id":01})"));
  CHECK_FALSE(read_device_properties("{\"name\":\"a\nb\"}"));
  CHECK(read_device_properties("{}"));
  // A field the calculator needs at 0 (no SMs): no estimate, the entry kept.
  std::string no_sms = kA100;
  no_sms.replace(no_sms.find("\"numSms\": 108"), 13, "\"numSms\": 0");
  const auto zero = read_device_properties(no_sms);
  REQUIRE(zero);
  CHECK_FALSE(zero->limits);
}
