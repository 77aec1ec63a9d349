// A CUDA allocation that failed for want of memory, as the CUDA hooks record
// it: a CudaApi call of an allocating entry point that returned
// cudaErrorMemoryAllocation (runtime) or CUDA_ERROR_OUT_OF_MEMORY (driver),
// both 2. Shared by the launcher (the run summary's line) and `ptprof memory`.
#pragma once
#include <array>
#include <cstdint>
#include <string_view>

namespace ptprof::cuda {

inline constexpr int32_t kOutOfMemoryResult = 2;  // cudaErrorMemoryAllocation == CUDA_ERROR_OUT_OF_MEMORY

// Entry points that allocate memory (device, managed or pinned host), by the
// prefix of their symbol (cuMemAlloc_v2, cudaMallocAsync_ptsz...).
inline bool allocates(std::string_view api) {
  constexpr std::array<std::string_view, 5> kPrefixes = {"cudaMalloc", "cudaHostAlloc", "cuMemAlloc", "cuMemCreate",
                                                         "cuMemHostAlloc"};
  for (std::string_view p : kPrefixes)
    if (api.starts_with(p)) return true;
  return false;
}

inline bool out_of_memory(std::string_view api, int32_t result) {
  return result == kOutOfMemoryResult && allocates(api);
}

}  // namespace ptprof::cuda
