#include "export/kernel_occupancy.hpp"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>

#ifndef PTPROF_HAVE_CUDA_OCCUPANCY
#define PTPROF_HAVE_CUDA_OCCUPANCY 0
#endif
#if PTPROF_HAVE_CUDA_OCCUPANCY
#include <cuda_occupancy.h>
#endif

namespace ptprof::exporting::detail {

std::optional<int> max_active_blocks_per_sm(const OccupancyDevice& d, int block_size, uint32_t registers,
                                            uint64_t shared_memory) {
#if PTPROF_HAVE_CUDA_OCCUPANCY
  cudaOccDeviceProp prop;
  prop.computeMajor = d.compute_major;
  prop.computeMinor = d.compute_minor;
  prop.maxThreadsPerBlock = d.max_threads_per_block;
  prop.maxThreadsPerMultiprocessor = d.max_threads_per_sm;
  prop.regsPerBlock = d.regs_per_block;
  prop.regsPerMultiprocessor = d.regs_per_sm;
  prop.warpSize = d.warp_size;
  prop.sharedMemPerBlock = size_t(d.shared_mem_per_block);
  prop.sharedMemPerMultiprocessor = size_t(d.shared_mem_per_sm);
  prop.numSms = d.num_sms;
  prop.sharedMemPerBlockOptin = size_t(d.shared_mem_per_block);
  prop.reservedSharedMemPerBlock = size_t(d.reserved_shared_mem_per_block);
  // Kineto's call (libkineto DeviceProperties.cpp): the kernel's registers
  // and shared memory, nothing else said of the function or the device.
  cudaOccFuncAttributes attr;
  attr.maxThreadsPerBlock = INT_MAX;
  attr.numRegs = int(std::min<uint32_t>(registers, uint32_t(INT_MAX)));
  attr.sharedSizeBytes = size_t(shared_memory);
  attr.partitionedGCConfig = PARTITIONED_GC_OFF;
  attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_DEFAULT;
  attr.maxDynamicSharedSizeBytes = 0;
  const cudaOccDeviceState state = {};
  cudaOccResult result;
  if (cudaOccMaxActiveBlocksPerMultiprocessor(&result, &prop, &attr, &state, block_size, 0) != CUDA_OCC_SUCCESS)
    return std::nullopt;
  return result.activeBlocksPerMultiprocessor;
#else
  (void)d, (void)block_size, (void)registers, (void)shared_memory;
  return std::nullopt;
#endif
}

bool has_occupancy_calculator() { return PTPROF_HAVE_CUDA_OCCUPANCY != 0; }

KernelOccupancy kernel_occupancy(const OccupancyDevice& d, const KernelLaunch& k) {
  // Kineto's arithmetic, in its types: unsigned products, float quotients,
  // 32 threads a warp whatever the device's warp size.
  const uint32_t blocks = k.grid[0] * k.grid[1] * k.grid[2];
  const uint32_t threads = k.block[0] * k.block[1] * k.block[2];
  KernelOccupancy out;
  out.blocks_per_sm = float(blocks) / float(d.num_sms);
  out.warps_per_sm = out.blocks_per_sm * float(threads) / 32.0f;
  const int block_size = int(threads);
  if (const std::optional<int> active = max_active_blocks_per_sm(d, block_size, k.registers, k.shared_memory)) {
    const float effective = std::min<float>(float(*active), out.blocks_per_sm);
    const float occupancy = effective * float(block_size) / float(d.max_threads_per_sm);
    out.achieved_percent = int(std::lround(double(occupancy) * 100.0));
  }
  return out;
}

void append_float(std::string& out, float v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

}  // namespace ptprof::exporting::detail
