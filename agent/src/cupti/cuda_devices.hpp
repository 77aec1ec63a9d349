// The GPUs' properties, from the driver, for the exports' deviceProperties
// and their occupancy estimate (cuda_status.hpp, kCudaDevicePrefix): each
// device's entry of Kineto's trace header, as compact JSON under Kineto's
// keys ("id" first), plus reservedSharedMemPerBlock, which CUDA's occupancy
// calculator needs and Kineto's header leaves out.
//
// Asked of libcuda.so.1's own exports, found with libc's dlsym in the
// library the process loaded (never the agent's interposers, never
// cuGetProcAddress): the questions are not the program's calls and record
// nothing. A driver the program has not initialised (no cuInit) answers
// CUDA_ERROR_NOT_INITIALIZED, and the question is asked again later.
#pragma once
#include <cuda.h>

#include <cstddef>
#include <string>
#include <vector>

namespace ptprof::agent::cupti {

// The driver entry points asked, as libcuda.so.1 exports them.
struct DeviceQueries {
  CUresult (*get_count)(int* count) = nullptr;                                             // cuDeviceGetCount
  CUresult (*get_name)(char* name, int length, CUdevice device) = nullptr;                 // cuDeviceGetName
  CUresult (*total_mem)(size_t* bytes, CUdevice device) = nullptr;                         // cuDeviceTotalMem_v2
  CUresult (*get_attribute)(int* value, CUdevice_attribute a, CUdevice device) = nullptr;  // cuDeviceGetAttribute
};

// libcuda.so.1's device queries, when the process has loaded it (dlopen
// RTLD_NOLOAD: never loads it); false when it is not loaded or lacks one.
bool find_device_queries(DeviceQueries& out);

enum class DevicesAnswer {
  Described,       // `out` holds one JSON object per device (none: no device)
  NotInitialized,  // cuInit has not been called yet: ask again later
  Failed,          // any other error: the driver will not say
};

// Each device's properties, ordinal by ordinal. A failed question leaves
// `out` empty; the reserved shared memory, which older drivers do not know,
// is left out of a device's object rather than failing it.
DevicesAnswer describe_devices(const DeviceQueries& q, std::vector<std::string>& out);

}  // namespace ptprof::agent::cupti
