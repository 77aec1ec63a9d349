// Kineto's occupancy args of a kernel ("blocks per SM", "warps per SM",
// "est. achieved occupancy %"), computed from its device's properties as
// Kineto computes them (libkineto/src/DeviceProperties.cpp): in float, with
// CUDA's occupancy calculator (the toolkit's cuda_occupancy.h,
// cudaOccMaxActiveBlocksPerMultiprocessor) called as Kineto calls it. A
// build without the toolkit's headers has no calculator: the blocks and warps
// per SM are still written, the occupancy estimate is not.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace ptprof::exporting::detail {

// What the calculator reads of a device: Kineto's deviceProperties keys.
struct OccupancyDevice {
  int compute_major = 0;
  int compute_minor = 0;
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;  // maxThreadsPerMultiprocessor
  int regs_per_block = 0;
  int regs_per_sm = 0;  // regsPerMultiprocessor
  int warp_size = 0;
  uint64_t shared_mem_per_block = 0;
  uint64_t shared_mem_per_sm = 0;  // sharedMemPerMultiprocessor
  int num_sms = 0;
  // Shared memory the driver reserves per block (Ampere on): the calculator
  // adds it to every block's. Not in Kineto's header; where a description
  // lacks it (a Kineto trace's), 1 KiB from compute capability 8 on, 0 before,
  // as the drivers report it.
  uint64_t reserved_shared_mem_per_block = 0;
};

struct KernelLaunch {
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  uint32_t registers = 0;      // per thread
  uint64_t shared_memory = 0;  // per block, static and dynamic (the calculator adds them up)
};

struct KernelOccupancy {
  float blocks_per_sm = 0;
  float warps_per_sm = 0;
  // lround(occupancy * 100); nothing when the calculator refuses the
  // device or launch (Kineto then writes -100).
  std::optional<int> achieved_percent;
};

// cudaOccMaxActiveBlocksPerMultiprocessor(...).activeBlocksPerMultiprocessor
// for Kineto's call (FUNC_SHMEM_LIMIT_DEFAULT, PARTITIONED_GC_OFF, no
// maximum block size, default device state); nothing where the calculator
// returns an error (an unknown compute capability, a block size of 0, shared
// memory no carveout holds) or the build has no calculator.
std::optional<int> max_active_blocks_per_sm(const OccupancyDevice& d, int block_size, uint32_t registers,
                                            uint64_t shared_memory);

// Whether this build has the toolkit's calculator (cuda_occupancy.h).
bool has_occupancy_calculator();

// Kineto's three args of one kernel on device `d` (num_sms > 0).
KernelOccupancy kernel_occupancy(const OccupancyDevice& d, const KernelLaunch& k);

// A float arg as Kineto's traces write it: the shortest text that reads
// back as the same float ("0.009259259", "22.222221", "8").
void append_float(std::string& out, float v);

}  // namespace ptprof::exporting::detail
