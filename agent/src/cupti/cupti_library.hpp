// Finding and opening CUPTI. The agent never links it: CUPTI is dlopen'ed
// only in a process that has CUDA in it, and the copy that process already
// uses wins, so that ptprof and the program (torch's Kineto) share one.
#pragma once
#include <cupti.h>

#include <string>
#include <vector>

#include "ptprof/status.hpp"

namespace ptprof::agent::cupti {

// Where to look for libcupti, best first: PTPROF_CUPTI_PATH (a file, or a
// directory holding libcupti.so*); a libcupti already loaded; the directory
// of a loaded libcudart, and pip's layouts beside it (nvidia/cuda_cupti/lib
// for CUDA 12 wheels, nvidia/cu13/lib for 13); the toolkit's.
// `loaded` are the paths of the libraries in the process.
std::vector<std::string> cupti_candidates(const char* env_path, const std::vector<std::string>& loaded);

// The CUPTI entry points ptprof uses, resolved with dlsym.
struct Api {
  CUptiResult (*subscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*) = nullptr;
  CUptiResult (*unsubscribe)(CUpti_SubscriberHandle) = nullptr;
  CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) = nullptr;
  CUptiResult (*enable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*disable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*flush_all)(uint32_t) = nullptr;
  CUptiResult (*get_next_record)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
  CUptiResult (*get_timestamp)(uint64_t*) = nullptr;
  CUptiResult (*push_external)(CUpti_ExternalCorrelationKind, uint64_t) = nullptr;
  CUptiResult (*pop_external)(CUpti_ExternalCorrelationKind, uint64_t*) = nullptr;
  CUptiResult (*callback_name)(CUpti_CallbackDomain, uint32_t, const char**) = nullptr;
  CUptiResult (*result_string)(CUptiResult, const char**) = nullptr;
  // Optional (null when this CUPTI lacks them): the CUDA graph node
  // callbacks that attribute a graph's kernels to their capturing op.
  CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId) = nullptr;
  CUptiResult (*graph_node_id)(CUgraphNode, uint64_t*) = nullptr;
  CUptiResult (*graph_id)(CUgraph, uint32_t*) = nullptr;
  // Optional: how many records CUPTI dropped for want of buffer space, for
  // a context and stream (asked once per completed buffer).
  CUptiResult (*dropped_records)(CUcontext, uint32_t, size_t*) = nullptr;
};

struct Library {
  void* handle = nullptr;
  std::string path;  // the file opened
  Api api;
};

// Opens the first candidate that loads and has every entry point. The
// error says what failed to load, and is empty when no candidate exists
// (the caller says where it looked).
Result<Library> open_cupti(const std::vector<std::string>& candidates);

// "CUPTI_ERROR_...: text" for a result.
std::string result_text(const Api& api, CUptiResult r);

}  // namespace ptprof::agent::cupti
