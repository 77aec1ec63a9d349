// A test-only stand-in for the CUDA driver (libcuda.so.1), built from the
// toolkit's headers: the entry points ptprof wraps, under their exported
// (versioned) names, and a cuGetProcAddress that maps API names to them as
// the real driver does (cuMemAlloc -> cuMemAlloc_v2; the per-thread default
// stream flag -> the _ptsz exports). A CUfunction is a StubFunction.
//
// Devices (cuDeviceGetCount, cuDeviceGet, cuDeviceGetName,
// cuDeviceTotalMem_v2, cuDeviceGetAttribute): when $PTPROF_REPLAY_PLAN names
// a GPU replay's plan, the devices of its `device` lines (the recorded
// trace's deviceProperties entries, Kineto's keys; the reserved shared
// memory per block, which Kineto's header lacks, 1 KiB from compute
// capability 8 on, as drivers report it); otherwise one fixed device, an
// A100's figures under the name "ptprof stub GPU". Unlike the real driver
// it answers before cuInit (the stand-in runtime never calls it), unless
// $STUB_CUDA_NEEDS_INIT=1: then CUDA_ERROR_NOT_INITIALIZED until cuInit.
#include <cuda.h>
#include <cudaProfiler.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "stub_function.hpp"

// Device pointers and stream handles are integers made pointers (and back);
// the entry points' names are the driver's.
// NOLINTBEGIN(performance-no-int-to-ptr,readability-identifier-naming)

#undef cuGetProcAddress
#define STUB_EXPORT extern "C" __attribute__((visibility("default")))

extern "C" {
CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags);
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                             unsigned int by, unsigned int bz, unsigned int shared, CUstream stream, void** params,
                             void** extra);
}

namespace {

CUresult mem_alloc(CUdeviceptr* p, size_t n) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  *p = reinterpret_cast<CUdeviceptr>(std::malloc(n));
  return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult launch(CUfunction f, void** params) {
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  reinterpret_cast<const StubFunction*>(f)->run(params);
  return CUDA_SUCCESS;
}

// With STUB_CUDA_INTERNAL_POINTERS=1, cuGetProcAddress hands out these
// instead of the exports, as a driver may hand out internal entry points.
CUresult internal_mem_alloc(CUdeviceptr* p, size_t n) { return mem_alloc(p, n); }
CUresult internal_launch(CUfunction f, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                         unsigned int, unsigned int, CUstream, void** params, void**) {
  return launch(f, params);
}
CUresult internal_launch_ptsz(CUfunction f, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                              unsigned int, unsigned int, CUstream, void** params, void**) {
  return launch(f, params);
}

// The current context's device, per thread as the driver's is; a context
// is its device + 1 made a pointer.
thread_local CUdevice current_device = 0;

bool internal_pointers() {
  const char* v = std::getenv("STUB_CUDA_INTERNAL_POINTERS");
  return v && v[0] == '1';
}

// ---- Devices.

struct StubDevice {
  int id = 0;
  std::string name;
  std::map<std::string, long long> values;  // Kineto's keys
};

// The members of a flat JSON object (a deviceProperties entry): strings
// into `name` (the one string it has), integers into `values`.
bool parse_device(const std::string& s, StubDevice& d) {
  size_t i = 0;
  auto space = [&] {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  };
  auto string = [&](std::string& out) {
    out.clear();
    if (i >= s.size() || s[i] != '"') return false;
    for (++i; i < s.size() && s[i] != '"'; ++i) {
      if (s[i] == '\\' && i + 1 < s.size()) ++i;
      out += s[i];
    }
    return i++ < s.size();
  };
  space();
  if (i >= s.size() || s[i++] != '{') return false;
  std::string key, text;
  for (;;) {
    space();
    if (i < s.size() && s[i] == '}') return true;
    if (!string(key)) return false;
    space();
    if (i >= s.size() || s[i++] != ':') return false;
    space();
    if (i < s.size() && s[i] == '"') {
      if (!string(text)) return false;
      if (key == "name") d.name = text;
    } else {
      char* end = nullptr;
      const long long v = std::strtoll(s.c_str() + i, &end, 10);
      if (end == s.c_str() + i) return false;
      i = size_t(end - s.c_str());
      while (i < s.size() && s[i] != ',' && s[i] != '}') ++i;  // a fraction, an exponent
      d.values[key] = v;
    }
    space();
    if (i < s.size() && s[i] == ',') ++i;
  }
}

StubDevice fixed_device() {
  StubDevice d;
  d.name = "ptprof stub GPU";
  d.values = {{"totalGlobalMem", 85899345920LL},
              {"computeMajor", 8},
              {"computeMinor", 0},
              {"maxThreadsPerBlock", 1024},
              {"maxThreadsPerMultiprocessor", 2048},
              {"regsPerBlock", 65536},
              {"regsPerMultiprocessor", 65536},
              {"warpSize", 32},
              {"sharedMemPerBlock", 49152},
              {"sharedMemPerMultiprocessor", 167936},
              {"numSms", 108},
              {"sharedMemPerBlockOptin", 166912}};
  return d;
}

// A replay plan's devices (its `device<TAB>id<TAB>json` lines), by id.
std::vector<StubDevice> plan_devices(const char* path) {
  std::vector<StubDevice> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("device\t", 0) != 0) continue;
    const size_t tab = line.find('\t', 7);
    if (tab == std::string::npos) continue;
    StubDevice d;
    d.id = std::atoi(line.c_str() + 7);
    if (d.id >= 0 && parse_device(line.substr(tab + 1), d)) out.push_back(d);
  }
  std::sort(out.begin(), out.end(), [](const StubDevice& a, const StubDevice& b) { return a.id < b.id; });
  return out;
}

const std::vector<StubDevice>& devices() {
  static const std::vector<StubDevice> all = [] {
    const char* plan = std::getenv("PTPROF_REPLAY_PLAN");
    if (plan && *plan) return plan_devices(plan);
    return std::vector<StubDevice>{fixed_device()};
  }();
  return all;
}

std::atomic<bool> initialised{false};

bool answering() {
  const char* v = std::getenv("STUB_CUDA_NEEDS_INIT");
  return !(v && v[0] == '1') || initialised.load();
}

// A device by ordinal: the plan's ids, as the trace numbered its GPUs.
const StubDevice* device_of(CUdevice ordinal) {
  for (const StubDevice& d : devices())
    if (d.id == ordinal) return &d;
  return nullptr;
}

const char* attribute_key(CUdevice_attribute a) {
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      return "computeMajor";
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      return "computeMinor";
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      return "maxThreadsPerBlock";
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      return "maxThreadsPerMultiprocessor";
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
      return "regsPerBlock";
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
      return "regsPerMultiprocessor";
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      return "warpSize";
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      return "sharedMemPerBlock";
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
      return "sharedMemPerMultiprocessor";
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      return "numSms";
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      return "sharedMemPerBlockOptin";
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK:
      return "reservedSharedMemPerBlock";
    default:
      return nullptr;
  }
}

}  // namespace

STUB_EXPORT CUresult cuInit(unsigned int) {
  initialised.store(true);
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuDeviceGetCount(int* count) {
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  if (!answering()) return CUDA_ERROR_NOT_INITIALIZED;
  *count = devices().empty() ? 0 : devices().back().id + 1;
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (!answering()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!device_of(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuDeviceGetName(char* name, int length, CUdevice device) {
  if (!name || length <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!answering()) return CUDA_ERROR_NOT_INITIALIZED;
  const StubDevice* d = device_of(device);
  if (!d) return CUDA_ERROR_INVALID_DEVICE;
  std::strncpy(name, d->name.c_str(), size_t(length) - 1);
  name[length - 1] = '\0';
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice device) {
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  if (!answering()) return CUDA_ERROR_NOT_INITIALIZED;
  const StubDevice* d = device_of(device);
  if (!d) return CUDA_ERROR_INVALID_DEVICE;
  auto it = d->values.find("totalGlobalMem");
  *bytes = it == d->values.end() ? 0 : size_t(it->second);
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice device) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  if (!answering()) return CUDA_ERROR_NOT_INITIALIZED;
  const StubDevice* d = device_of(device);
  if (!d) return CUDA_ERROR_INVALID_DEVICE;
  const char* key = attribute_key(attribute);
  if (!key) return CUDA_ERROR_INVALID_VALUE;  // an attribute the stand-in does not model
  auto it = d->values.find(key);
  if (it != d->values.end()) {
    *value = int(it->second);
    return CUDA_SUCCESS;
  }
  if (attribute == CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK) {
    auto major = d->values.find("computeMajor");
    *value = major != d->values.end() && major->second >= 8 ? 1024 : 0;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}
STUB_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) { return mem_alloc(p, n); }
STUB_EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
  std::free(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* p, size_t n, CUstream) { return mem_alloc(p, n); }
STUB_EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream) {
  std::free(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}
// A physical allocation's handle is host memory of its size.
STUB_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* h, size_t n, const CUmemAllocationProp* prop,
                                 unsigned long long) {
  if (!h || !prop) return CUDA_ERROR_INVALID_VALUE;
  *h = reinterpret_cast<CUmemGenericAllocationHandle>(std::malloc(n));
  return *h ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
STUB_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h) {
  std::free(reinterpret_cast<void*>(h));
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  current_device = CUdevice(reinterpret_cast<uintptr_t>(ctx) - 1);
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuCtxGetDevice(CUdevice* device) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  *device = current_device;
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void* s, size_t n, CUstream) {
  std::memcpy(reinterpret_cast<void*>(d), s, n);
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuMemcpyDtoHAsync_v2(void* d, CUdeviceptr s, size_t n, CUstream) {
  std::memcpy(d, reinterpret_cast<const void*>(s), n);
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                                    unsigned int, unsigned int, CUstream, void** params, void**) {
  return launch(f, params);
}
STUB_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int, unsigned int, unsigned int, unsigned int,
                                         unsigned int, unsigned int, unsigned int, CUstream, void** params, void**) {
  return launch(f, params);
}
STUB_EXPORT CUresult cuFuncGetName(const char** name, CUfunction f) {
  if (!name || !f) return CUDA_ERROR_INVALID_VALUE;
  *name = reinterpret_cast<const StubFunction*>(f)->name;
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuProfilerStart(void) { return CUDA_SUCCESS; }
STUB_EXPORT CUresult cuProfilerStop(void) { return CUDA_SUCCESS; }

namespace {
struct Entry {
  const char* api;
  void* plain;
  void* per_thread;
};
}  // namespace

STUB_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int, cuuint64_t flags,
                                         CUdriverProcAddressQueryResult* status) {
  const bool internal = internal_pointers();
  const Entry entries[] = {
      {"cuInit", reinterpret_cast<void*>(&cuInit), nullptr},
      {"cuGetProcAddress", reinterpret_cast<void*>(&cuGetProcAddress_v2), nullptr},
      {"cuMemAlloc", internal ? reinterpret_cast<void*>(&internal_mem_alloc) : reinterpret_cast<void*>(&cuMemAlloc_v2),
       nullptr},
      {"cuMemFree", reinterpret_cast<void*>(&cuMemFree_v2), nullptr},
      {"cuMemcpyHtoDAsync", reinterpret_cast<void*>(&cuMemcpyHtoDAsync_v2), nullptr},
      {"cuMemcpyDtoHAsync", reinterpret_cast<void*>(&cuMemcpyDtoHAsync_v2), nullptr},
      {"cuLaunchKernel",
       internal ? reinterpret_cast<void*>(&internal_launch) : reinterpret_cast<void*>(&cuLaunchKernel),
       internal ? reinterpret_cast<void*>(&internal_launch_ptsz) : reinterpret_cast<void*>(&cuLaunchKernel_ptsz)},
      {"cuFuncGetName", reinterpret_cast<void*>(&cuFuncGetName), nullptr},
      {"cuDeviceGetCount", reinterpret_cast<void*>(&cuDeviceGetCount), nullptr},
      {"cuDeviceGet", reinterpret_cast<void*>(&cuDeviceGet), nullptr},
      {"cuDeviceGetName", reinterpret_cast<void*>(&cuDeviceGetName), nullptr},
      {"cuDeviceTotalMem", reinterpret_cast<void*>(&cuDeviceTotalMem_v2), nullptr},
      {"cuDeviceGetAttribute", reinterpret_cast<void*>(&cuDeviceGetAttribute), nullptr},
  };
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  for (const Entry& e : entries) {
    if (std::strcmp(e.api, symbol) != 0) continue;
    *pfn = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && e.per_thread ? e.per_thread : e.plain;
    if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
  }
  *pfn = nullptr;
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}
STUB_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, version, flags, nullptr);
}
// NOLINTEND(performance-no-int-to-ptr,readability-identifier-naming)
