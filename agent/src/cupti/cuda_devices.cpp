#include "cupti/cuda_devices.hpp"

#include <dlfcn.h>

#include <cstdio>

#include "base/real_libc.hpp"

namespace ptprof::agent::cupti {

namespace {

// Kineto's keys (libkineto/src/DeviceProperties.cpp), in its order, after
// "id", "name" and "totalGlobalMem"; what cudaGetDeviceProperties fills
// them from.
struct AttributeKey {
  const char* key;
  CUdevice_attribute attribute;
};
constexpr AttributeKey kAttributes[] = {
    {"computeMajor", CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
    {"computeMinor", CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
    {"maxThreadsPerBlock", CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
    {"maxThreadsPerMultiprocessor", CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR},
    {"regsPerBlock", CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK},
    {"regsPerMultiprocessor", CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR},
    {"warpSize", CU_DEVICE_ATTRIBUTE_WARP_SIZE},
    {"sharedMemPerBlock", CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK},
    {"sharedMemPerMultiprocessor", CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR},
    {"numSms", CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
    {"sharedMemPerBlockOptin", CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
};

void append_number(std::string& out, const char* key, long long v) {
  char buf[96];
  std::snprintf(buf, sizeof buf, ",\"%s\":%lld", key, v);
  out += buf;
}

// A device name as a JSON string (names are ASCII; anything else is kept
// byte for byte but for what JSON forbids).
void append_name(std::string& out, const char* name) {
  out += '"';
  for (const char* p = name; *p; ++p) {
    const unsigned char c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  out += '"';
}

DevicesAnswer answer_of(CUresult r) {
  return r == CUDA_ERROR_NOT_INITIALIZED ? DevicesAnswer::NotInitialized : DevicesAnswer::Failed;
}

}  // namespace

bool find_device_queries(DeviceQueries& out) {
  // The process's own driver, if it has one; this reference is kept (the
  // pointers must stay valid, and a driver is never unloaded).
  void* driver = real_dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (!driver) return false;
  DeviceQueries q;
  q.get_count = reinterpret_cast<decltype(q.get_count)>(real_dlsym(driver, "cuDeviceGetCount"));
  q.get_name = reinterpret_cast<decltype(q.get_name)>(real_dlsym(driver, "cuDeviceGetName"));
  q.total_mem = reinterpret_cast<decltype(q.total_mem)>(real_dlsym(driver, "cuDeviceTotalMem_v2"));
  q.get_attribute = reinterpret_cast<decltype(q.get_attribute)>(real_dlsym(driver, "cuDeviceGetAttribute"));
  if (!q.get_count || !q.get_name || !q.total_mem || !q.get_attribute) {
    dlclose(driver);
    return false;
  }
  out = q;
  return true;
}

DevicesAnswer describe_devices(const DeviceQueries& q, std::vector<std::string>& out) {
  out.clear();
  int count = 0;
  if (const CUresult r = q.get_count(&count); r != CUDA_SUCCESS) return answer_of(r);
  std::vector<std::string> described;
  for (int device = 0; device < count; ++device) {
    char name[256] = {};
    size_t total = 0;
    if (const CUresult r = q.get_name(name, int(sizeof name) - 1, device); r != CUDA_SUCCESS) return answer_of(r);
    if (const CUresult r = q.total_mem(&total, device); r != CUDA_SUCCESS) return answer_of(r);
    std::string json = "{\"id\":" + std::to_string(device) + ",\"name\":";
    append_name(json, name);
    append_number(json, "totalGlobalMem", static_cast<long long>(total));
    for (const AttributeKey& a : kAttributes) {
      int v = 0;
      if (const CUresult r = q.get_attribute(&v, a.attribute, device); r != CUDA_SUCCESS) return answer_of(r);
      append_number(json, a.key, v);
    }
    // CUDA 11 and later; without it the exports assume the drivers' 1 KiB
    // from compute capability 8 on.
    int reserved = 0;
    if (q.get_attribute(&reserved, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, device) == CUDA_SUCCESS)
      append_number(json, "reservedSharedMemPerBlock", reserved);
    json += '}';
    described.push_back(std::move(json));
  }
  out = std::move(described);
  return DevicesAnswer::Described;
}

}  // namespace ptprof::agent::cupti
